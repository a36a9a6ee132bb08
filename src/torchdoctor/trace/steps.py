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

from torchdoctor.trace.events import ANNOTATION, Trace, is_kind, step_number
from torchdoctor.trace.intervals import expand_ranges

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
    annotations = np.flatnonzero(trace.kind == ANNOTATION)  # few: test their names only (not every row's)
    rows = annotations[is_step[trace.name_id[annotations]]] if len(trace) else []
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


def assign_rows(trace: Trace, steps: list[Step]) -> np.ndarray:
    """`assign(trace.ts_us, steps)`: the step of every row, laid out range by range (rows are in start
    order: a step's rows run from the first starting in it to the first starting at its end or the
    next step's start). One pass over the rows, where a binary search per row cost 30 ms on the
    operators of a 1 GB trace."""
    lo, hi = bounds(steps)
    first = np.searchsorted(trace.ts_us, lo, side="left")
    stop = np.minimum(np.searchsorted(trace.ts_us, hi, side="left"), np.append(first[1:], len(trace)))
    edges = np.empty(2 * len(steps), np.int64)
    edges[0::2], edges[1::2] = first, np.maximum(stop, first)
    step = np.full(2 * len(steps) + 1, -1, np.int64)  # before the first step, each step, after it
    step[1::2] = np.arange(len(steps))
    return np.repeat(step, np.diff(edges, prepend=0, append=len(trace)))


def bounds(steps: list[Step]) -> tuple[np.ndarray, np.ndarray]:
    """The steps' windows as arrays: starts, ends."""
    return np.array([s.start_us for s in steps], float), np.array([s.end_us for s in steps], float)


def batches(steps: list[Step], size: int = 8) -> list[list[int]]:
    """Indices of `steps` (in start order) in batches of at most `size` whose windows do not overlap,
    each starting at or after the end of the ones before it in the batch. Per-step figures are
    computed a batch at a time: one step at a time costs more in numpy calls than in work, all at
    once runs out of the CPU cache (8 steps of a 1 GB trace: about 70,000 events), and a batch's
    order lets one running maximum serve every step (intervals.run_lengths). Profiler steps follow
    one another; steps that overlap go to further batches."""
    layers: list[list[int]] = []
    ends: list[float] = []
    for i, step in enumerate(steps):
        free = next((k for k, end in enumerate(ends) if step.start_us >= end), len(layers))
        if free == len(layers):
            layers.append([])
            ends.append(step.end_us)
        layers[free].append(i)
        ends[free] = step.end_us
    return [layer[at : at + size] for layer in layers for at in range(0, len(layer), size)]


def starting_in(trace: Trace, steps: list[Step], kinds: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    """Rows of the events of `kinds` that start in each step's window and end after its start (the
    window's events that begin in it), step after step, and the index into `steps` of each."""
    lo, hi = bounds(steps)
    first = np.searchsorted(trace.ts_us, lo, side="left")
    owner, rows = expand_ranges(first, np.searchsorted(trace.ts_us, hi, side="left") - first)
    keep = is_kind(trace.kind[rows], kinds) & (trace.end_us[rows] > lo[owner])
    return rows[keep], owner[keep]
