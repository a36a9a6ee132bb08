"""Profiler steps: the windows every per-step figure is computed over.

A step is a host-side `ProfilerStep#N` annotation. Kineto also writes a `gpu_user_annotation`
copy of each, and some traces repeat the host one; each number is kept once (the longest
host-side event). A trace with no ProfilerStep is one window, number -1, spanning all events.
Device work belongs to the step whose window contains its launching runtime call (the link is
the `correlation` id), as in HTA.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from torchdoctor.trace.events import ANNOTATION, Trace, step_number

WHOLE_TRACE = -1


@dataclass(frozen=True, slots=True)
class Step:
    number: int  # N of ProfilerStep#N, or WHOLE_TRACE
    start_us: float
    end_us: float

    @property
    def wall_us(self) -> float:
        return self.end_us - self.start_us


def find_steps(trace: Trace, selection: tuple[int, int] | None = None) -> list[Step]:
    """The trace's profiler steps in time order (restricted to `selection`, inclusive)."""
    numbers = np.array([step_number(n) if n.startswith("ProfilerStep") else None for n in trace.names])
    is_step = np.array([n is not None for n in numbers], bool)
    rows = np.flatnonzero((trace.kind == ANNOTATION) & is_step[trace.name_id]) if len(trace) else []
    best: dict[int, Step] = {}
    for row in rows:
        number = int(numbers[trace.name_id[row]])
        step = Step(number, float(trace.ts_us[row]), float(trace.ts_us[row] + trace.dur_us[row]))
        if number not in best or step.wall_us > best[number].wall_us:
            best[number] = step
    steps = sorted(best.values(), key=lambda s: s.start_us)
    if not steps:
        return [Step(WHOLE_TRACE, *_span(trace))] if len(trace) else []
    if selection is not None:
        steps = [s for s in steps if selection[0] <= s.number <= selection[1]]
    return steps


def _span(trace: Trace) -> tuple[float, float]:
    return float(trace.ts_us.min()), float(trace.end_us.max())


def launch_rows(trace: Trace, rows: np.ndarray) -> np.ndarray:
    """Row of the runtime call that launched each device event in `rows` (-1 if none)."""
    corr, runtime = trace.launches_by_correlation
    out = np.full(rows.size, -1, np.int64)
    if corr.size == 0:
        return out
    want = trace.correlation[rows]
    pos = np.clip(np.searchsorted(corr, want), 0, corr.size - 1)
    found = (corr[pos] == want) & (want >= 0)
    out[found] = runtime[pos[found]]
    return out


def assign(times_us: np.ndarray, steps: list[Step]) -> np.ndarray:
    """Index into `steps` of the window containing each time (-1 outside every step)."""
    if not steps:
        return np.full(times_us.size, -1)
    starts = np.array([s.start_us for s in steps])
    ends = np.array([s.end_us for s in steps])
    idx = np.searchsorted(starts, times_us, side="right") - 1
    ok = (idx >= 0) & (times_us < ends[np.clip(idx, 0, None)])
    return np.where(ok, idx, -1)
