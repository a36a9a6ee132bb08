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
from torchdoctor.trace.analyses.rank_steps import StepWalls
from torchdoctor.trace.analyses.step_breakdown import breakdown_dict, step_breakdowns
from torchdoctor.trace.analyses.temporal import temporal_breakdown
from torchdoctor.trace.analyses.window import window_section
from torchdoctor.trace.config import TraceConfig
from torchdoctor.trace.device import device_events
from torchdoctor.trace.events import HOST_KINDS, Trace
from torchdoctor.trace.step_columns import StepColumns
from torchdoctor.trace.steps import WHOLE_TRACE, Step, assign, assign_rows, batches, find_steps, starting_in


def analyse_rank(trace: Trace, config: TraceConfig) -> tuple[dict[str, Any], StepWalls]:
    """The per-rank section of the report (documented in docs/trace.md), and every analysed step's
    number and wall time (for the cross-rank step matrix, whatever the section lists)."""
    steps = find_steps(trace, config.steps)
    warnings = list(trace.warnings)
    if steps and steps[0].number == WHOLE_TRACE:
        warnings.append(f"{trace.path}: no ProfilerStep annotation; the whole trace is analysed as one window")
    if not steps:
        warnings.append(f"{trace.path}: nothing to analyse (no events, or no profiler step in --steps)")
    op_rows, op_self = self_times(trace)
    op_step = assign_rows(trace, steps).take(op_rows)
    columns = _step_columns(trace, steps, config.steps_listed)
    in_steps = op_step >= 0
    window = window_section(trace, steps, has_device_info=bool(trace.metadata.get("deviceProperties")))
    listed = min(len(steps), config.steps_listed)  # the steps the section lists in full
    out = {
        "rank": trace.rank,
        "path": trace.path,
        "events_count": len(trace),
        "truncated": trace.truncated,
        "caveats": list(trace.warnings),  # every load warning changes how the figures read
        "steps_count": len(steps),
        "step_us_median": float(np.median(columns.wall_us)) if steps else None,
        "host": op_summary(trace, op_rows[in_steps], op_self[in_steps], config),
        "shares": columns.weighted_shares(),
        "sync_calls_per_step": float(np.mean(columns.sync_count)) if steps else 0.0,
        "sync_calls": columns.sync_totals(),
        "breakdown_us": columns.breakdown_sums(),
        "steps": _listed_steps(trace, steps[:listed], columns, (op_rows, op_self, op_step), config),
        "steps_left_out": len(steps) - listed,
        "device": _device(trace, steps, config) if trace.has_device() else None,
        "window": window,
        "facts": facts_section(trace, window.get("start_us", -np.inf), window.get("end_us", np.inf)),
        "dialect": trace.dialect,
    }
    warnings += _window_warnings(trace, window)
    walls = StepWalls(np.array([s.number for s in steps], np.int64), columns.wall_us)
    return {**out, "warnings": warnings}, walls


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


def _step_columns(trace: Trace, steps: list[Step], listed: int) -> StepColumns:
    """Every step's figures that the rank's totals add up, as columns (trace/step_columns.py),
    computed a batch of steps at a time (steps.batches)."""
    columns = StepColumns.empty(steps, step_breakdowns(trace, steps), listed)
    for batch in batches(steps):
        mine = [steps[i] for i in batch]
        rows, owner = starting_in(trace, mine, HOST_KINDS)
        columns.add(batch, annotation_shares(trace, mine, rows, owner), sync_calls(trace, mine, rows, owner))
    return columns


def _listed_steps(trace: Trace, steps: list[Step], columns: StepColumns,
                  ops: tuple[np.ndarray, np.ndarray, np.ndarray], config: TraceConfig) -> list[dict[str, Any]]:
    """The section of each of `steps` (the first `steps_listed` analysed ones). `ops`: the rows of
    the CPU operators, their self times and their steps' indices."""
    op_rows, op_self, op_step = ops
    by_step = np.argsort(op_step, kind="stable")
    by_step = by_step[(op_step[by_step] >= 0) & (op_step[by_step] < len(steps))]
    host = op_summaries(trace, op_rows[by_step], op_self[by_step], op_step[by_step], len(steps), config)
    copies = pageable_copies_by_step(trace, steps)
    out = []
    for i, step in enumerate(steps):
        host_ops = host[i]
        host_ops["small_op_storm"] = host_ops["small_ops_count"] > config.small_op_storm_per_step
        breakdown = breakdown_dict(columns.breakdown_us[i])
        gpu_busy = breakdown["kernel_us"] + breakdown["memcpy_us"] + breakdown["memset_us"]
        out.append({
            "step": step.number,
            "start_us": step.start_us,
            "wall_us": step.wall_us,
            "host": {**host_ops, **columns.shares_of(i)},
            "sync_calls": columns.syncs_of(i),
            "breakdown_us": breakdown,
            "gpu_busy_us": gpu_busy,
            "gpu_utilisation_fraction": gpu_busy / step.wall_us if step.wall_us else 0.0,
            "pageable_memcpy": copies[i],
        })  # fmt: skip
    return out


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
