"""Per-rank analysis of a multi-rank Record, from `record.ranks` (the timing window of every rank).

Definitions (seconds are medians over a rank's timed steps, or fractions of its summed wall):
- `step_s`: the rank's median step wall time; `data_wait_s`: its median wait for the next batch.
- `backward_s`: step_s x backward_fraction. DDP all-reduces gradients inside backward, so a rank
  that waits for a slower one waits there.
- `work_s`: step_s - backward_s, the time a rank spends outside the synchronising backward.
- lockstep: every rank's step_s is within `LOCKSTEP_SPREAD` of the median over ranks. Ranks that
  synchronise every step (DDP, FSDP) run in lockstep, so their walls cannot tell who is slow; the
  rank the others wait for is then the one with the most `work_s`. Otherwise step_s ranks them.
- `slowest_rank`, `gap_s` (its load minus the fastest rank's), `excess_fraction` (its load over the
  median over ranks, minus one), where load is work_s in lockstep and step_s otherwise.
- `stragglers`: the ranks `torchdoctor.trace.analyses.ranks.stragglers` names from the loads (the one
  straggler definition, shared with the trace analysis): load over the median load of the other ranks
  (`excess_s`) above both `STRAGGLER_EXCESS` (10 %) of the median step time and `STRAGGLER_MIN_S`
  (5 ms); `cause` is "data loading" when the rank's data wait, over the others' median, explains more
  than half of its excess.
- `slowest_by_step`: for each rank, the share of step indices in which its wall time was the
  largest (unsynchronised scripts: a persistent straggler shows a share near 1).
- `imbalance_fraction`: (max - min) / max of the load over ranks (`ranks.spread`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from torchdoctor.distributed.failures import failed_ranks
from torchdoctor.distributed.runtime_analysis import runtime_analysis
from torchdoctor.distributed.section import Straggler
from torchdoctor.finding import Finding, Fix, new_finding, severity_at
from torchdoctor.trace.analyses.ranks import spread, stragglers

SCHEMA_VERSION = 1
LOCKSTEP_SPREAD = 0.05


def _summary(rank: dict[str, Any]) -> dict[str, Any]:
    summary = rank.get("summary") or {}
    return dataclasses.asdict(summary) if dataclasses.is_dataclass(summary) else dict(summary)


def _rank_row(rank: dict[str, Any]) -> dict[str, Any]:
    walls = rank["steps"]
    summary = _summary(rank)
    step_s = float(np.median(walls))
    backward_s = step_s * (summary.get("backward_fraction") or 0.0)
    waits = rank.get("data_wait_s") or [0.0]
    return {"rank": rank["rank"], "steps_count": len(walls), "step_s": step_s,
            "data_wait_s": float(np.median(waits)), "backward_s": backward_s, "work_s": step_s - backward_s}


def _slowest_by_step(ranks: list[dict[str, Any]]) -> dict[str, float]:
    length = min(len(r["steps"]) for r in ranks)
    walls = np.array([r["steps"][:length] for r in ranks])
    winners = np.argmax(walls, axis=0)
    return {str(r["rank"]): float(np.mean(winners == i)) for i, r in enumerate(ranks)}


def rank_analysis(ranks: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The `record.distributed` section (docs/distributed.md), or None with fewer than two ranks.
    The timing keys are there only when at least two ranks measured steps."""
    if len(ranks) < 2:
        return None
    section = {"schema_version": SCHEMA_VERSION, "failed_ranks": failed_ranks(ranks),
               "runtime": runtime_analysis(ranks), "warnings": rank_warnings(ranks)}
    measured = [r for r in ranks if r.get("steps")]
    if len(measured) < 2:
        return {**section, "ranks_count": len(measured)}
    return {**section, **_timing(measured)}


def rank_warnings(ranks: list[dict[str, Any]]) -> list[str]:
    """Mismatched step counts, and ranks whose trace files are missing (the trace analysis then
    covers the other ranks)."""
    warnings = []
    counts = {r["rank"]: len(r.get("steps") or []) for r in ranks}
    if len(set(counts.values())) > 1:
        listed = ", ".join(f"rank {rank}: {count}" for rank, count in counts.items())
        warnings.append(f"the ranks measured different numbers of steps ({listed}); "
                        "figures compare the steps they have in common")
    for rank in ranks:
        missing = [t for t in rank.get("traces") or [] if not Path(t).exists()]
        if missing:
            warnings.append(f"rank {rank['rank']}: trace file missing ({', '.join(missing)}); "
                            "the trace analysis covers the other ranks")
    return warnings


def _timing(measured: list[dict[str, Any]]) -> dict[str, Any]:
    rows = [_rank_row(r) for r in measured]
    steps = np.array([r["step_s"] for r in rows])
    median_step = float(np.median(steps))
    lockstep = bool(np.all(np.abs(steps - median_step) <= LOCKSTEP_SPREAD * median_step))
    loads = np.array([r["work_s"] if lockstep else r["step_s"] for r in rows])
    median_load = float(np.median(loads))
    slow, fast = int(np.argmax(loads)), int(np.argmin(loads))
    slow_ranks = [_straggler(i, excess, rows, median_step) for i, excess in stragglers(loads, median_step)]
    counts = [r["steps_count"] for r in rows]
    return {
        "ranks_count": len(rows),
        "lockstep": lockstep,
        "load": "work_s" if lockstep else "step_s",
        "step_s_median_over_ranks": median_step,
        "slowest_rank": rows[slow]["rank"],
        "fastest_rank": rows[fast]["rank"],
        "gap_s": float(loads[slow] - loads[fast]),
        "excess_fraction": float(loads[slow] / median_load - 1) if median_load > 0 else None,
        "imbalance_fraction": spread(loads),
        "stragglers": slow_ranks,
        "slowest_by_step": _slowest_by_step(measured),
        "step_counts_match": len(set(counts)) == 1,
        "per_rank": rows,
    }


def _straggler(i: int, excess: float, rows: list[dict[str, Any]], median_step: float) -> dict[str, Any]:
    others = [j for j in range(len(rows)) if j != i]
    data_excess = rows[i]["data_wait_s"] - float(np.median([rows[j]["data_wait_s"] for j in others]))
    cause = "data loading" if data_excess > excess / 2 else "compute or host work"
    return {"rank": rows[i]["rank"], "excess_s": excess, "cause": cause,
            "excess_of_step_fraction": excess / median_step}


#: The finding a straggler gives (the diagnosis rule TD-SCALE-002 and `torchdoctor scale` report it).
STRAGGLER_FINDING = "TD-SCALE-002"
#: Severity by the straggler's excess over the others, as a share of a step.
STRAGGLER_WARNING, STRAGGLER_PROBLEM = 0.05, 0.20
STRAGGLER_EXPLANATION = "Collectives finish only when the slowest rank arrives, so its extra time is paid by all ranks."
STRAGGLER_FIX = Fix("Look at that rank's host (data, CPU, thermal throttling) and its share of the data.",
                    "torchdoctor trace analyze rank-*.json.gz  # compare per-rank breakdowns")


def straggler_finding(slow_ranks: Sequence[Straggler], nproc: int | None = None) -> Finding | None:
    """TD-SCALE-002 for the worst of `slow_ranks` (a `stragglers` list of this section), or None when
    there is none. Upside: its excess as a share of the median step (`excess_of_step_fraction`).
    `nproc`: the job's size, named in the title and the evidence (the scaling sweep's sizes)."""
    if not slow_ranks:
        return None
    worst = max(slow_ranks, key=lambda s: s.excess_of_step_fraction)
    share = worst.excess_of_step_fraction
    at = f"at {nproc} processes " if nproc is not None else ""
    evidence = {"nproc": nproc} if nproc is not None else {}
    evidence |= {"slowest_rank": worst.rank, "excess_s": worst.excess_s, "excess_of_step_fraction": share,
                 "cause": worst.cause}
    return new_finding(STRAGGLER_FINDING, "scale", severity_at(share, STRAGGLER_WARNING, STRAGGLER_PROBLEM) or "info",
                       f"{at}rank {worst.rank} holds the others back by {share:.0%} of a step ({worst.cause})",
                       share, evidence, STRAGGLER_EXPLANATION, STRAGGLER_FIX)
