"""All the analyses of one rank's trace: per step and over the whole selection."""

from __future__ import annotations

from typing import Any

import numpy as np

from torchdoctor.trace.analyses.annotations import annotation_shares
from torchdoctor.trace.analyses.copies_syncs import pageable_copies, pageable_copies_by_step, sync_calls
from torchdoctor.trace.analyses.facts import facts_section
from torchdoctor.trace.analyses.host_ops import op_summaries, op_summary, self_times
from torchdoctor.trace.analyses.idle import idle_breakdown
from torchdoctor.trace.analyses.kernels import kernel_breakdown
from torchdoctor.trace.analyses.launches import launch_stats
from torchdoctor.trace.analyses.overlap import comm_comp_overlap
from torchdoctor.trace.analyses.queue import queue_depth
from torchdoctor.trace.analyses.step_breakdown import step_breakdowns
from torchdoctor.trace.analyses.temporal import temporal_breakdown
from torchdoctor.trace.analyses.window import window_section
from torchdoctor.trace.config import TraceConfig
from torchdoctor.trace.device import device_events
from torchdoctor.trace.events import HOST_KINDS, Trace
from torchdoctor.trace.steps import WHOLE_TRACE, Step, assign, assign_rows, batches, find_steps, starting_in


def analyse_rank(trace: Trace, config: TraceConfig) -> dict[str, Any]:
    """The per-rank section of the report (documented in docs/trace.md)."""
    steps = find_steps(trace, config.steps)
    warnings = list(trace.warnings)
    if steps and steps[0].number == WHOLE_TRACE:
        warnings.append(f"{trace.path}: no ProfilerStep annotation; the whole trace is analysed as one window")
    if not steps:
        warnings.append(f"{trace.path}: nothing to analyse (no events, or no profiler step in --steps)")
    op_rows, op_self = self_times(trace)
    op_step = assign_rows(trace, steps).take(op_rows)
    per_step = _steps(trace, steps, op_rows, op_self, op_step, config)
    in_steps = op_step >= 0
    window = window_section(trace, steps, has_device_info=bool(trace.metadata.get("deviceProperties")))
    out = {
        "rank": trace.rank,
        "path": trace.path,
        "events_count": len(trace),
        "truncated": trace.truncated,
        "caveats": list(trace.warnings),  # every load warning changes how the figures read
        "steps_count": len(steps),
        "step_us_median": float(np.median([s.wall_us for s in steps])) if steps else None,
        "host": op_summary(trace, op_rows[in_steps], op_self[in_steps], config),
        "shares": _weighted_shares(per_step),
        "sync_calls_per_step": float(np.mean([s["sync_calls"]["count"] for s in per_step])) if per_step else 0.0,
        "breakdown_us": _sum_breakdowns(per_step),
        "steps": per_step,
        "device": _device(trace, steps, config) if trace.has_device() else None,
        "window": window,
        "facts": facts_section(trace, window.get("start_us", -np.inf), window.get("end_us", np.inf)),
        "dialect": trace.dialect,
    }
    warnings += _window_warnings(trace, window)
    return {**out, "warnings": warnings}


_STATE_WARNINGS = {
    "capture": "the window is a CUDA/HIP graph capture: most kernel launches in it are recorded into a graph, "
               "not run, so GPU utilisation and idle time are not meaningful here; profile the graph's replays",
    "no_device_work": "no device event ran in the window although the trace comes from a GPU run; "
                      "GPU utilisation is not meaningful here",
    "graph_replay_without_kernels": "the window replays CUDA/HIP graphs whose kernels the trace does not show; "
                                    "GPU utilisation would be undercounted and is not reported",
}


def _window_warnings(trace: Trace, window: dict[str, Any]) -> list[str]:
    text = _STATE_WARNINGS.get(window.get("state", ""))
    return [f"{trace.path}: {text}"] if text else []


def _steps(trace: Trace, steps: list[Step], op_rows: np.ndarray, op_self: np.ndarray, op_step: np.ndarray,
           config: TraceConfig) -> list[dict[str, Any]]:
    """Each step's section, its figures computed a batch of steps at a time (steps.batches)."""
    if not steps:
        return []
    breakdowns = step_breakdowns(trace, steps)
    copies = pageable_copies_by_step(trace, steps)
    shares: list[dict[str, Any]] = [{} for _ in steps]
    syncs: list[dict[str, Any]] = [{} for _ in steps]
    for batch in batches(steps):
        mine = [steps[i] for i in batch]
        rows, owner = starting_in(trace, mine, HOST_KINDS)
        for i, share, sync in zip(batch, annotation_shares(trace, mine, rows, owner),
                                  sync_calls(trace, mine, rows, owner)):
            shares[i], syncs[i] = share, sync
    by_step = np.argsort(op_step, kind="stable")
    by_step = by_step[op_step[by_step] >= 0]
    host = op_summaries(trace, op_rows[by_step], op_self[by_step], op_step[by_step], len(steps), config)
    out = []
    for i, step in enumerate(steps):
        host_ops = host[i]
        host_ops["small_op_storm"] = host_ops["small_ops_count"] > config.small_op_storm_per_step
        breakdown = breakdowns[i]
        gpu_busy = breakdown["kernel_us"] + breakdown["memcpy_us"] + breakdown["memset_us"]
        out.append({
            "step": step.number,
            "start_us": step.start_us,
            "wall_us": step.wall_us,
            "host": {**host_ops, **shares[i]},
            "sync_calls": syncs[i],
            "breakdown_us": breakdown,
            "gpu_busy_us": gpu_busy,
            "gpu_utilisation_fraction": gpu_busy / step.wall_us if step.wall_us else 0.0,
            "pageable_memcpy": copies[i],
        })  # fmt: skip
    return out


def _weighted_shares(per_step: list[dict[str, Any]]) -> dict[str, float]:
    """Each `*_fraction` of the steps' host section, weighted by step wall time."""
    wall = sum(s["wall_us"] for s in per_step)
    keys = [k for k in (per_step[0]["host"] if per_step else {}) if k.endswith("_fraction")]
    return {k: sum(s["host"][k] * s["wall_us"] for s in per_step) / wall if wall else 0.0 for k in keys}


def _sum_breakdowns(per_step: list[dict[str, Any]]) -> dict[str, float]:
    total: dict[str, float] = {}
    for step in per_step:
        for key, value in step["breakdown_us"].items():
            total[key] = total.get(key, 0.0) + value
    return total


def _device(trace: Trace, steps: list[Step], config: TraceConfig) -> dict[str, Any]:
    """Device figures over the selection; `temporal` etc. use HTA's window (see trace/device.py)."""
    dev = device_events(trace, steps, hta_window=config.steps is None)
    if config.steps is not None:  # keep device work launched inside the selected steps
        launched = np.where(dev.launch >= 0, trace.ts_us[np.clip(dev.launch, 0, None)], trace.ts_us[dev.rows])
        keep = assign(launched, steps) >= 0
        dev = type(dev)(dev.rows[keep], dev.ktype[keep], dev.launch[keep])
    temporal = temporal_breakdown(trace, dev)
    by_kind = temporal.get("by_kind_us", {})  # the kernel types' merged time, merged once ({} without device events)
    return {
        "temporal": temporal,
        "kernels": kernel_breakdown(trace, dev, config.top_n),
        "launches": launch_stats(trace, dev, config, max(len(steps), 1)),
        "overlap": comm_comp_overlap(trace, dev),
        "idle": idle_breakdown(trace, dev),
        "queue": queue_depth(trace, dev, config),
        "pageable_memcpy": pageable_copies(trace, dev.rows),
        "compute_us": by_kind.get("computation", 0.0),
        "comm_us": by_kind.get("communication", 0.0),
    }
