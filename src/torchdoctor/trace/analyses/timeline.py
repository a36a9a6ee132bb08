"""The timeline of one profiled step: its host and device events, few enough to draw.

Which step: the profiler step whose wall time is the median of the trace's steps (the one most
like the others), or the whole trace when it has no `ProfilerStep` annotation.
Which events: host events (CPU operators, annotations, runtime calls) that start inside the step,
and device events (kernels, memcpy, memset) launched from inside it (their runtime call starts in
the step; the correlation link, as in trace/steps.py), so device work that runs after the step's
host window still shows. When there are more than `max_events`, the longest are kept (short ones
would be narrower than a pixel) and `dropped_count` says how many were left out.

Times in the result are microseconds relative to the step's start. `depth` is the nesting level
of an event among the kept events of its lane (0 = outermost), for drawing flame-style rows.

Several ranks (trace/rank_task.py): the same step (the first file's median step, where a rank has
it) of every rank is drawn, each aligned at its own step start, with the caps shared so that all
ranks together keep at most `RANK_EVENTS_TOTAL` events.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

import numpy as np

from torchdoctor.trace.events import (
    ANNOTATION, CPU_OP, DEVICE_KINDS, KERNEL, MEMCPY, MEMSET, RUNTIME, Trace, is_kind,
)
from torchdoctor.trace.steps import Step, find_steps, launch_rows

SCHEMA_VERSION = 1
_KIND_NAMES = {CPU_OP: "cpu_op", ANNOTATION: "annotation", RUNTIME: "runtime",
               KERNEL: "kernel", MEMCPY: "memcpy", MEMSET: "memset"}  # fmt: skip
_HOST_DRAWN = (CPU_OP, ANNOTATION, RUNTIME)
RANK_EVENTS_TOTAL = 1500  # events kept over all ranks' timelines together (the page stays light)


@dataclass(frozen=True)
class StepTimeline:
    """One step's events; `lanes[i]` is a host thread or a device stream, `events[j]["lane"]` indexes it."""

    path: str
    rank: int
    step: int  # N of ProfilerStep#N, -1 for the whole trace
    wall_us: float  # the step's host wall time
    span_us: float  # from the step's start to the end of the last kept event (>= wall_us)
    lanes: tuple[dict[str, Any], ...]
    events: tuple[dict[str, Any], ...]
    events_count: int  # events of the step before the cap
    dropped_count: int

    def to_dict(self) -> dict[str, Any]:
        # the fields as they are, not dataclasses.asdict: it deep-copied every event (19 ms) only for the copies
        # to be replaced by the lists below
        fields_ = {f.name: getattr(self, f.name) for f in fields(self)}
        return {"schema_version": SCHEMA_VERSION, **fields_, "lanes": list(self.lanes), "events": list(self.events)}


def step_timeline(trace: Trace, *, max_events: int = 600, step_number: int | None = None) -> StepTimeline | None:
    """The timeline of `ProfilerStep#step_number` if the trace has it, else of the median step
    (see the module docstring); None for a trace with no events."""
    steps = find_steps(trace)
    if not steps:
        return None
    chosen = [s for s in steps if s.number == step_number]
    step = chosen[0] if chosen else sorted(steps, key=lambda s: s.wall_us)[(len(steps) - 1) // 2]
    rows = _step_rows(trace, step)
    kept = rows[np.argsort(-trace.dur_us[rows], kind="stable")[:max_events]]
    kept = kept[np.lexsort((-trace.dur_us[kept], trace.ts_us[kept]))]
    lane_keys = [_lane_key(trace, int(r)) for r in kept]
    lanes = sorted(set(lane_keys), key=lambda k: (k[0] != "host", k[1], k[2]))
    lane_index = {key: i for i, key in enumerate(lanes)}
    events = _events(trace, kept, [lane_index[k] for k in lane_keys], step.start_us)
    span = max([step.wall_us, *(e["start_us"] + e["dur_us"] for e in events)])
    return StepTimeline(
        path=trace.path, rank=trace.rank, step=step.number, wall_us=step.wall_us, span_us=span,
        lanes=tuple(_lane(key) for key in lanes), events=tuple(events),
        events_count=int(rows.size), dropped_count=int(rows.size - kept.size),
    )  # fmt: skip


def _step_rows(trace: Trace, step: Step) -> np.ndarray:
    """Host events starting in the step and device events launched from it."""
    first, last = np.searchsorted(trace.ts_us, [step.start_us, step.end_us], side="left")  # rows are in start order
    host = first + np.flatnonzero(is_kind(trace.kind[first:last], _HOST_DRAWN))
    device = np.flatnonzero(is_kind(trace.kind, DEVICE_KINDS))
    launch = launch_rows(trace, device)
    launched_at = np.where(launch >= 0, trace.ts_us[np.clip(launch, 0, None)], trace.ts_us[device])
    device = device[(launched_at >= step.start_us) & (launched_at < step.end_us)]
    return np.concatenate([host, device])


def _lane_key(trace: Trace, row: int) -> tuple[str, int, int]:
    if trace.kind[row] in DEVICE_KINDS:
        return ("device", int(trace.pid[row]), int(trace.stream[row]))
    return ("host", int(trace.pid[row]), int(trace.tid[row]))


def _lane(key: tuple[str, int, int]) -> dict[str, Any]:
    kind, pid, ident = key
    label = f"thread {ident}" if kind == "host" else f"device {pid} stream {ident}"
    return {"kind": kind, "pid": pid, "id": ident, "label": label}


def _events(trace: Trace, rows: np.ndarray, lanes: list[int], origin_us: float) -> list[dict[str, Any]]:
    """Events in start order with their nesting depth per lane (a sequential stack walk)."""
    stacks: dict[int, list[float]] = {}
    out = []
    for row, lane in zip(rows.tolist(), lanes):
        start, dur = float(trace.ts_us[row]), float(trace.dur_us[row])
        stack = stacks.setdefault(lane, [])
        while stack and stack[-1] <= start:
            stack.pop()
        out.append({"lane": lane, "name": trace.names[trace.name_id[row]], "kind": _KIND_NAMES[int(trace.kind[row])],
                    "start_us": round(start - origin_us, 3), "dur_us": round(dur, 3), "depth": len(stack)})  # fmt: skip
        stack.append(start + dur)
    return out
