"""All the analyses of one rank's trace: per step and over the whole selection."""

from __future__ import annotations

from typing import Any

import numpy as np

from torchdoctor.trace.analyses.annotations import annotation_shares
from torchdoctor.trace.analyses.copies_syncs import pageable_copies, sync_calls
from torchdoctor.trace.analyses.facts import facts_section
from torchdoctor.trace.analyses.host_ops import op_summary, self_times
from torchdoctor.trace.analyses.idle import idle_breakdown
from torchdoctor.trace.analyses.kernels import kernel_breakdown
from torchdoctor.trace.analyses.launches import launch_stats
from torchdoctor.trace.analyses.overlap import comm_comp_overlap
from torchdoctor.trace.analyses.queue import queue_depth
from torchdoctor.trace.analyses.step_breakdown import step_breakdown
from torchdoctor.trace.analyses.temporal import temporal_breakdown
from torchdoctor.trace.analyses.window import window_section
from torchdoctor.trace.config import TraceConfig
from torchdoctor.trace.device import COMMUNICATION, COMPUTATION, device_events
from torchdoctor.trace.events import DEVICE_KINDS, HOST_KINDS, Trace, is_kind
from torchdoctor.trace.intervals import length
from torchdoctor.trace.steps import WHOLE_TRACE, Step, assign, find_steps


def analyse_rank(trace: Trace, config: TraceConfig) -> dict[str, Any]:
    """The per-rank section of the report (documented in docs/trace.md)."""
    steps = find_steps(trace, config.steps)
    warnings = list(trace.warnings)
    if steps and steps[0].number == WHOLE_TRACE:
        warnings.append(f"{trace.path}: no ProfilerStep annotation; the whole trace is analysed as one window")
    if not steps:
        warnings.append(f"{trace.path}: nothing to analyse (no events, or no profiler step in --steps)")
    op_rows, op_self = self_times(trace)
    op_step = assign(trace.ts_us[op_rows], steps)
    running_end = np.maximum.accumulate(trace.end_us)
    by_step = np.argsort(op_step, kind="stable")
    bounds = np.searchsorted(op_step[by_step], np.arange(len(steps) + 1))
    per_step = []
    for i, step in enumerate(steps):
        mine = by_step[bounds[i] : bounds[i + 1]]
        per_step.append(_step(trace, step, _window_rows(trace, step, running_end), op_rows[mine], op_self[mine], config))
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


def _window_rows(trace: Trace, step: Step, running_end: np.ndarray) -> np.ndarray:
    """Rows of every event overlapping the step (events are sorted by start)."""
    first = int(np.searchsorted(running_end, step.start_us, side="right"))
    last = int(np.searchsorted(trace.ts_us, step.end_us, side="left"))
    rows = np.arange(first, max(first, last))
    return rows[trace.end_us[rows] > step.start_us]


def _step(trace: Trace, step: Step, rows: np.ndarray, ops: np.ndarray, self_us: np.ndarray, config: TraceConfig) -> dict[str, Any]:
    starts_inside = rows[trace.ts_us[rows] >= step.start_us]
    host = starts_inside[is_kind(trace.kind[starts_inside], HOST_KINDS)]
    breakdown = step_breakdown(trace, step, rows)
    host_ops = op_summary(trace, ops, self_us, config)
    host_ops["small_op_storm"] = host_ops["small_ops_count"] > config.small_op_storm_per_step
    gpu_busy = breakdown["kernel_us"] + breakdown["memcpy_us"] + breakdown["memset_us"]
    device_rows = rows[is_kind(trace.kind[rows], DEVICE_KINDS)]
    return {
        "step": step.number,
        "start_us": step.start_us,
        "wall_us": step.wall_us,
        "host": {**host_ops, **annotation_shares(trace, step, host)},
        "sync_calls": sync_calls(trace, host),
        "breakdown_us": breakdown,
        "gpu_busy_us": gpu_busy,
        "gpu_utilisation_fraction": gpu_busy / step.wall_us if step.wall_us else 0.0,
        "pageable_memcpy": pageable_copies(trace, device_rows),
    }


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
    return {
        "temporal": temporal_breakdown(trace, dev),
        "kernels": kernel_breakdown(trace, dev, config.top_n),
        "launches": launch_stats(trace, dev, config, max(len(steps), 1)),
        "overlap": comm_comp_overlap(trace, dev),
        "idle": idle_breakdown(trace, dev),
        "queue": queue_depth(trace, dev, config),
        "pageable_memcpy": pageable_copies(trace, dev.rows),
        "compute_us": length(dev.intervals(trace, dev.ktype == COMPUTATION)),
        "comm_us": length(dev.intervals(trace, dev.ktype == COMMUNICATION)),
    }
