"""The window: the one definition of "the step" that every utilisation, idle and share figure the
findings use comes from (docs/trace.md, "The window").

Kind `steps`: each profiler step extended to the device work it launched, as the TensorBoard
profiler plugin does (`torch_tb_profiler/profiler/event_parser.py`, `_update_steps_duration`):
step i spans from max(its host start, the previous step's end) to max(its host end, the end of
the last device event launched from inside it). The window is the union of the analysed steps.
Kind `whole_trace` (no ProfilerStep): one step from the first CPU operator's start to the last one's
end (the plugin's choice; all host events if there is no operator), extended the same way, so a
profiler started long before the work does not count its idle pre-roll.

Over the window:
- `kernel_utilisation_fraction`: time with at least one kernel running, over the window; per
  device in `kernel_utilisation_by_device` and the least busy device's figure at the top (the
  plugin's "GPU utilisation"); `busy_fraction` counts memcpy and memset too;
- `idle_*`: the time no device event runs, attributed to the layer the host was in: `data` (the
  host is inside a DataLoader span, events.DATALOADER_RE), then per remaining idle gap `sync` (a
  blocking call, events.BLOCKING_CALL_RE, overlaps the gap: the host drained the device and has not
  refilled it yet), `device` (the next device event had been launched before the gap began: the
  device waited on itself, e.g. a dependency between streams) or `host` (the host had not launched
  the next work yet: Python, operator dispatch, launches). The four add up to `idle_us`;
- `dataloader_fraction`: the union of DataLoader spans over the window (>= the plugin's DataLoader
  share, which counts an instant as DataLoader only when no kernel, copy or runtime call runs);
- `communication_fraction` / `communication_exposed_fraction`: communication kernels (NCCL/RCCL)
  and host collectives (`nccl:*`, `gloo:*`), all / not overlapped by computation kernels or copies
  (the plugin's "Communication" share);
- `state`: `ok`, or why utilisation means nothing here: `cpu_only` (no device at all), `capture`
  (most launches of the window fall inside a CUDA/HIP stream capture: they are recorded into a
  graph, not run), `no_device_work` (a device trace with no device event in the window),
  `graph_replay_without_kernels` (graph launches whose kernels the trace does not show).
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from torchdoctor.trace.events import (
    ANNOTATION, BLOCKING_CALL_RE, CAPTURE_BEGIN_RE, CAPTURE_END_RE, COMM_KERNEL_RE, CPU_OP, DATALOADER_RE,
    DEVICE_KINDS, GRAPH_LAUNCH_RE, HOST_KINDS, KERNEL, LAUNCH_RE, RUNTIME, Trace, is_kind,
)  # fmt: skip
from torchdoctor.trace.intervals import EMPTY, Intervals, intersect, length, merge, overlap_lengths, subtract
from torchdoctor.trace.steps import WHOLE_TRACE, Step, assign, launch_rows

HOST_COLLECTIVE_RE = re.compile(r"^(nccl|gloo):")
CAPTURE_SHARE = 0.5  # launches inside a capture, of all the window's launches, for a capture window
CAPTURE_MIN_LAUNCHES = 10
SYNC_SLACK_US = 5.0  # a blocking call ending this close before an idle gap still caused it
IDLE_CAUSES = ("data", "sync", "host", "device")


def window_section(trace: Trace, steps: list[Step], *, has_device_info: bool = False) -> dict[str, Any]:
    """The window's figures (module docstring). `has_device_info`: the trace names a GPU
    (deviceProperties), so a window without device events is `no_device_work`, not `cpu_only`."""
    if not steps:
        return {"kind": "empty", "state": "no_events", "span_us": 0.0}
    dev = np.flatnonzero(is_kind(trace.kind, DEVICE_KINDS))
    launch = launch_rows(trace, dev)
    step_s, step_e = _step_windows(trace, steps, dev, launch)
    win = merge(step_s, step_e)
    span = length(win)
    out: dict[str, Any] = {
        "kind": "whole_trace" if steps[0].number == WHOLE_TRACE else "steps",
        "start_us": float(win[0][0]) if span else steps[0].start_us,
        "end_us": float(win[1][-1]) if span else steps[-1].end_us,
        "span_us": span,
        "steps_count": len(steps) if steps[0].number != WHOLE_TRACE else 0,
    }
    out["step_us_median"] = float(np.median(step_e - step_s))
    loader = _union(trace, trace.rows_named(DATALOADER_RE, (CPU_OP, ANNOTATION)))
    out["dataloader_fraction"] = _share(intersect(loader, win), span)
    out.update(_device_figures(trace, dev, launch, win, span, loader))
    out["state"] = _state(trace, dev, launch, win, has_device_info)
    return out


def _step_windows(trace: Trace, steps: list[Step], dev: np.ndarray, launch: np.ndarray) -> Intervals:
    """Each step extended to the device work it launched (module docstring): starts, ends."""
    if steps[0].number == WHOLE_TRACE:
        steps = [_operator_span(trace)]
    starts = np.array([s.start_us for s in steps])
    ends = np.array([s.end_us for s in steps])
    if dev.size == 0:
        return starts, ends
    launched = launch >= 0
    owner = np.full(dev.size, -1)
    owner[launched] = assign(trace.ts_us[launch[launched]], steps)
    dev_end = np.full(len(steps), -np.inf)
    mine = owner >= 0
    np.maximum.at(dev_end, owner[mine], trace.end_us[dev[mine]])
    out_s, out_e = np.empty(len(steps)), np.empty(len(steps))
    prev_end = -np.inf
    for i in range(len(steps)):
        out_s[i] = max(prev_end, starts[i])
        out_e[i] = max(ends[i], dev_end[i], out_s[i])
        prev_end = out_e[i]
    return out_s, out_e


def _operator_span(trace: Trace) -> Step:
    """The no-ProfilerStep window's host part: first to last CPU operator (else host event, else event)."""
    for kinds in ((CPU_OP,), HOST_KINDS):
        rows = np.flatnonzero(is_kind(trace.kind, kinds))
        if rows.size:
            return Step(WHOLE_TRACE, float(trace.ts_us[rows].min()), float(trace.end_us[rows].max()))
    return Step(WHOLE_TRACE, float(trace.ts_us.min()), float(trace.end_us.max()))


def _union(trace: Trace, rows: np.ndarray) -> Intervals:
    return merge(trace.ts_us[rows], trace.end_us[rows]) if rows.size else EMPTY


def _share(part: Intervals, span: float) -> float:
    return length(part) / span if span else 0.0


def _device_figures(trace: Trace, dev: np.ndarray, launch: np.ndarray, win: Intervals, span: float,
                    loader: Intervals) -> dict[str, Any]:
    kernels = dev[trace.kind[dev] == KERNEL]
    device_union = _union(trace, dev)
    busy = intersect(device_union, win)
    by_device = {}
    for pid in np.unique(trace.pid[kernels]):
        by_device[str(int(pid))] = _share(intersect(_union(trace, kernels[trace.pid[kernels] == pid]), win), span)
    comm_kernel = trace.name_mask(COMM_KERNEL_RE, dev)
    comm = merge(*np.concatenate([_union(trace, dev[comm_kernel]),
                                  _union(trace, trace.rows_named(HOST_COLLECTIVE_RE, (CPU_OP, ANNOTATION)))], axis=1))
    compute = _union(trace, dev[~comm_kernel]) if comm_kernel.any() else device_union  # the same rows, merged
    comm_figures = {
        "communication_fraction": _share(intersect(comm, win), span),
        "communication_exposed_fraction": _share(intersect(subtract(comm, compute), win), span),
    }
    if length(busy) == 0:  # no device work in the window: no utilisation or idle time to speak of
        none = ("kernel_utilisation_fraction", "busy_us", "busy_fraction", "idle_us", "idle_fraction",
                *(f"idle_{c}_{u}" for c in IDLE_CAUSES for u in ("us", "fraction")))
        return {**dict.fromkeys(none), "kernel_utilisation_by_device": {}, **comm_figures}
    idle = subtract(win, busy)
    causes = _idle_causes(trace, dev, launch, idle, loader)
    idle_us = length(idle)
    return {
        "kernel_utilisation_fraction": min(by_device.values()) if by_device else 0.0,
        "kernel_utilisation_by_device": by_device,
        "busy_us": length(busy),
        "busy_fraction": _share(busy, span),
        "idle_us": idle_us,
        "idle_fraction": idle_us / span if span else 0.0,
        **{f"idle_{c}_us": causes[c] for c in IDLE_CAUSES},
        **{f"idle_{c}_fraction": (causes[c] / span if span else 0.0) for c in IDLE_CAUSES},
        **comm_figures,
    }


def _idle_causes(trace: Trace, dev: np.ndarray, launch: np.ndarray, idle: Intervals,
                 loader: Intervals) -> dict[str, float]:
    """Attribute each idle gap (module docstring): DataLoader overlap first, then the rest of the gap."""
    gap_s, gap_e = idle
    if gap_s.size == 0:
        return dict.fromkeys(IDLE_CAUSES, 0.0)
    data = overlap_lengths(loader, gap_s, gap_e)
    rest = (gap_e - gap_s) - data
    blocking = _union(trace, trace.rows_named(BLOCKING_CALL_RE, HOST_KINDS))
    synced = _overlaps(blocking, gap_s - SYNC_SLACK_US, gap_e)
    order = np.argsort(trace.ts_us[dev], kind="stable")
    dev_start, dev_launch = trace.ts_us[dev][order], launch[order]
    nxt = np.searchsorted(dev_start, gap_e, side="left")
    has_next = nxt < dev_start.size
    nxt_launch = dev_launch[np.clip(nxt, 0, max(dev_start.size - 1, 0))] if dev_start.size else np.full(gap_s.size, -1)
    launched_at = np.where(has_next & (nxt_launch >= 0), trace.ts_us[np.clip(nxt_launch, 0, None)], np.inf)
    queued = ~synced & (launched_at < gap_s)
    host = ~synced & ~queued
    return {"data": float(data.sum()), "sync": float(rest[synced].sum()),
            "host": float(rest[host].sum()), "device": float(rest[queued].sum())}


def _overlaps(merged: Intervals, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """For each closed [lo[i], hi[i]]: some interval of the merged set meets it."""
    s, e = merged
    if s.size == 0:
        return np.zeros(np.asarray(lo).size, bool)
    return np.searchsorted(s, hi, side="right") > np.searchsorted(e, lo, side="left")


def _state(trace: Trace, dev: np.ndarray, launch: np.ndarray, win: Intervals, has_device_info: bool) -> str:
    in_window = lambda rows: rows[_overlaps(win, trace.ts_us[rows], trace.ts_us[rows])]  # noqa: E731
    launches = in_window(trace.rows_named(LAUNCH_RE, (RUNTIME,)))
    dev_in_window = dev[_overlaps(win, trace.ts_us[dev], trace.end_us[dev])] if dev.size else dev
    if dev.size == 0 and not (trace.kind == RUNTIME).any() and not has_device_info:
        return "cpu_only"
    captured = _captured(trace, launches)
    if captured >= max(CAPTURE_MIN_LAUNCHES, CAPTURE_SHARE * launches.size):
        return "capture"
    if dev_in_window.size == 0:
        return "no_device_work"
    graphs = in_window(trace.rows_named(GRAPH_LAUNCH_RE, (RUNTIME,)))
    if graphs.size and not np.isin(graphs, launch).any():
        return "graph_replay_without_kernels"
    return "ok"


def _captured(trace: Trace, launches: np.ndarray) -> int:
    """Launch calls made inside a stream capture (BeginCapture to the next EndCapture, same thread)."""
    begins = trace.rows_named(CAPTURE_BEGIN_RE, (RUNTIME,))
    if begins.size == 0 or launches.size == 0:
        return 0
    ends = trace.rows_named(CAPTURE_END_RE, (RUNTIME,))
    inside = np.zeros(launches.size, bool)
    for row in begins:
        same = ends[(trace.tid[ends] == trace.tid[row]) & (trace.ts_us[ends] >= trace.ts_us[row])]
        stop = trace.end_us[same].min() if same.size else np.inf
        inside |= (trace.tid[launches] == trace.tid[row]) & (trace.ts_us[launches] >= trace.ts_us[row]) \
            & (trace.ts_us[launches] <= stop)
    return int(inside.sum())
