"""From the ranks' run-time facts (`record.ranks[i]["runtime"]`, see `observe/probes/distributed.py`) to
`record.distributed["runtime"]` (docs/distributed.md).

Definitions:
- `grad_sync`: per rank, backward calls, DDP gradient-synchronising backwards and optimizer steps
  over the whole run. `allreduce_backwards_per_optimizer_step` = synchronising backwards /
  optimizer steps; each of them all-reduces every gradient bucket, so `allreduces_per_optimizer_step`
  = that x the number of buckets. `accumulation_without_no_sync`: several backwards per
  optimizer step and more than one of them synchronising (`no_sync()` would leave one).
- `sampler`: a shuffling DistributedSampler iterated twice with the same epoch and the same first
  indices did not get `set_epoch`: `set_epoch_missing` true; false when its iterations differed;
  null when no shuffling sampler was iterated twice (nothing to tell).
- `batch_cost`: per step, the elements of the first input tensor summed over the step's forwards
  (batch x padded length). With ranks in lockstep, each step lasts as long as its costliest rank;
  `idle_fraction` = mean over steps of 1 - mean(cost over ranks) / max(cost over ranks), the share
  of the work the ranks would spend waiting if time followed cost. `unbalanced` when it exceeds
  `BATCH_IDLE_LIMIT`.
- `ddp`: rank 0's DDP settings; `find_unused_parameters_unneeded` when the flag is on and the
  reducer found no unused parameter (an extra autograd-graph walk per step for nothing).
"""

from __future__ import annotations

from typing import Any

import numpy as np

#: A per-step cost spread that would leave ranks idle for more than this share is reported.
BATCH_IDLE_LIMIT = 0.10
#: More synchronising backwards per optimizer step than this means accumulation without no_sync.
SYNC_PER_STEP_LIMIT = 1.5


def _grad_sync_row(rank: int, runtime: dict[str, Any]) -> dict[str, Any]:
    steps = runtime["optimizer_steps"]
    buckets = len((runtime.get("ddp") or {}).get("bucket_sizes_bytes") or []) or None
    synced = runtime["synced_forwards"] / steps if steps else None
    backward = runtime["backward_calls"] / steps if steps else None
    return {
        "rank": rank, "optimizer_steps": steps, "backward_calls": runtime["backward_calls"],
        "allreduce_backwards": runtime["synced_forwards"], "backward_per_optimizer_step": backward,
        "allreduce_backwards_per_optimizer_step": synced,
        "allreduces_per_optimizer_step": synced * buckets if synced is not None and buckets else None,
    }  # fmt: skip


def grad_sync(runtimes: list[tuple[int, dict[str, Any]]]) -> dict[str, Any]:
    rows = [_grad_sync_row(rank, runtime) for rank, runtime in runtimes]
    worst = max(rows, key=lambda r: r["allreduce_backwards_per_optimizer_step"] or 0.0)
    accumulating = (worst["backward_per_optimizer_step"] or 0.0) >= SYNC_PER_STEP_LIMIT
    return {
        "ddp_seen": any(runtime.get("ddp") for _, runtime in runtimes),
        "backward_per_optimizer_step": worst["backward_per_optimizer_step"],
        "allreduce_backwards_per_optimizer_step": worst["allreduce_backwards_per_optimizer_step"],
        "allreduces_per_optimizer_step": worst["allreduces_per_optimizer_step"],
        "accumulation_without_no_sync": accumulating
        and (worst["allreduce_backwards_per_optimizer_step"] or 0.0) >= SYNC_PER_STEP_LIMIT,
        "per_rank": rows,
    }


def sampler(runtimes: list[tuple[int, dict[str, Any]]]) -> dict[str, Any]:
    repeats, compared, ranks_repeating = 0, 0, set()
    for rank, runtime in runtimes:
        by_sampler: dict[int, list[dict[str, Any]]] = {}
        for it in runtime.get("sampler_iterations") or []:
            if it["shuffle"]:
                by_sampler.setdefault(it["sampler_id"], []).append(it)
        for iterations in by_sampler.values():
            for a, b in zip(iterations, iterations[1:]):
                compared += 1
                if (a["epoch"], a["indices_hash"]) == (b["epoch"], b["indices_hash"]):
                    repeats += 1
                    ranks_repeating.add(rank)
    counts = [len(r.get("sampler_iterations") or []) for _, r in runtimes]
    return {"iterations_per_rank_max": max(counts, default=0), "epoch_pairs_compared": compared,
            "repeated_epochs": repeats, "ranks_repeating": sorted(ranks_repeating),
            "set_epoch_missing": (repeats > 0) if compared else None}


def batch_cost(runtimes: list[tuple[int, dict[str, Any]]]) -> dict[str, Any] | None:
    """Null when a rank recorded no input tensor (cost unknown)."""
    series = [r.get("step_elements") or [] for _, r in runtimes]
    length = min(len(s) for s in series)
    if length == 0:
        return None
    costs = np.array([s[:length] for s in series], dtype=float)  # ranks x steps
    peaks = costs.max(axis=0)
    if not np.all(peaks > 0):
        return None
    idle = float(np.mean(1.0 - costs.mean(axis=0) / peaks))
    per_rank = [{"rank": rank, "elements_per_step_median": float(np.median(row)),
                 "elements_total": float(row.sum())} for (rank, _), row in zip(runtimes, costs)]
    return {"steps_compared": length, "idle_fraction": idle, "unbalanced": idle > BATCH_IDLE_LIMIT,
            "heaviest_rank_by_step": _heaviest_share(runtimes, costs), "per_rank": per_rank}


def _heaviest_share(runtimes: list[tuple[int, dict[str, Any]]], costs: np.ndarray) -> dict[str, float]:
    """Per rank, the share of steps in which its cost alone was the largest (ties count for none)."""
    alone = (costs == costs.max(axis=0)) & ((costs == costs.max(axis=0)).sum(axis=0) == 1)
    return {str(rank): float(np.mean(alone[i])) for i, (rank, _) in enumerate(runtimes)}


def ddp(runtimes: list[tuple[int, dict[str, Any]]]) -> dict[str, Any] | None:
    settings = next((r["ddp"] for _, r in runtimes if r.get("ddp")), None)
    if settings is None:
        return None
    unneeded = settings["find_unused_parameters"] and settings.get("unused_parameter_bytes") == 0
    return {**settings, "buckets_count": len(settings["bucket_sizes_bytes"]),
            "find_unused_parameters_unneeded": bool(unneeded)}


def runtime_analysis(ranks: list[dict[str, Any]]) -> dict[str, Any] | None:
    """`record.distributed["runtime"]`, or None when no rank recorded run-time facts."""
    runtimes = [(r["rank"], r["runtime"]) for r in ranks if r.get("runtime")]
    if not runtimes:
        return None
    return {"grad_sync": grad_sync(runtimes), "sampler": sampler(runtimes),
            "batch_cost": batch_cost(runtimes) if len(runtimes) > 1 else None, "ddp": ddp(runtimes)}
