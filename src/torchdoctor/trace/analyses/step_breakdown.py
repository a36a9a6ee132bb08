"""Step-time breakdown in the TensorBoard profiler plugin's order; the parts sum to the wall time.

Each instant of the step window goes to the first category active then, in this order:
Kernel (device kernels), Memcpy, Memset, Communication (host collective ops: `nccl:*`, `gloo:*`,
`c10d::*`, `record_param_comms`), Runtime (CUDA/HIP runtime and driver calls), DataLoader (host
events whose name contains `DataLoader`), CPU Exec (any other CPU operator or annotation), Other
(nothing recorded: Python or idle). Device events count in the host step window in which they ran.

Steps are computed a batch at a time (steps.batches), from a sweep over the batch's events: each
category's events merged, then the times at which the set of active categories changes. A step's
window cut out of that sweep has the same spans, in the same order, as a sweep over the step's own
events (`intervals.coverage_by_mask`): a category's union inside the window is the same whichever
events outside it are merged too.
"""

from __future__ import annotations

import numpy as np

from torchdoctor.trace.events import (
    ANNOTATION, COMM_OP_RE, CPU_OP, DATALOADER_RE, KERNEL, MEMCPY, MEMSET, RUNTIME, STEP_NAME_RE, Trace, is_kind,
)  # fmt: skip
from torchdoctor.trace.intervals import Intervals, merge
from torchdoctor.trace.steps import Step, batches, bounds

CATEGORIES = ("kernel", "memcpy", "memset", "communication", "runtime", "dataloader", "cpu_exec")
BREAKDOWN_KEYS = (*(f"{name}_us" for name in CATEGORIES), "other_us")
_COMM, _LOADER, _EXEC, _NONE = 3, 5, 6, 7  # host categories of a name (a ProfilerStep counts in none)


def step_breakdowns(trace: Trace, steps: list[Step]) -> np.ndarray:
    """`<category>_us` for each category, then `other_us` (the columns, in BREAKDOWN_KEYS' order), of
    each step's window (the rows). Each batch's time by combination of categories is folded into the
    categories at once: kept for every step, the combinations took 1 KB a step (100 MB at 100,000
    steps) where the categories take 64 bytes."""
    lo, hi = bounds(steps)
    category = _categories(trace)
    running_end = np.maximum.accumulate(trace.end_us)
    lowest_bit = np.array([(m & -m).bit_length() - 1 for m in range(1 << len(CATEGORIES))])
    first_active = [lowest_bit == i for i in range(len(CATEGORIES))] + [lowest_bit == -1]  # -1: none (other)
    out = np.zeros((len(steps), len(BREAKDOWN_KEYS)))
    for batch in batches(steps):
        first = int(np.searchsorted(running_end, lo[batch[0]], side="right"))  # the batch's events and a few more
        last = int(np.searchsorted(trace.ts_us, hi[batch[-1]], side="left"))
        by_category = first + np.argsort(category[first:last], kind="stable")  # a radix sort: one pass
        ts, end = trace.ts_us[by_category], trace.end_us[by_category]
        cut = np.cumsum(np.bincount(category[first:last], minlength=len(CATEGORIES) + 1)).tolist()
        sets = [merge(ts[a:b], end[a:b]) for a, b in zip([0, *cut], cut[: len(CATEGORIES)])]
        cover = _cover(*_sweep(sets), lo[batch], hi[batch])
        for i, combination_us in zip(batch, cover):
            out[i] = [combination_us[sel].sum() for sel in first_active]
    return out


def breakdown_dict(row: np.ndarray) -> dict[str, float]:
    """One step's row of `step_breakdowns` as the report's `breakdown_us` dict."""
    return dict(zip(BREAKDOWN_KEYS, row.tolist()))


def _categories(trace: Trace) -> np.ndarray:
    """Each row's category (index into CATEGORIES; _NONE for none), the host ones decided per name."""
    by_kind = np.full(256, _NONE, np.uint8)
    by_kind[[KERNEL, MEMCPY, MEMSET, RUNTIME]] = [0, 1, 2, 4]
    category = by_kind.take(trace.kind.view(np.uint8))
    step, comm = trace.name_table(STEP_NAME_RE), trace.name_table(COMM_OP_RE)
    loader = trace.name_table(DATALOADER_RE)
    by_name = np.where(step, _NONE, np.where(comm, _COMM, np.where(loader, _LOADER, _EXEC))).astype(np.uint8)
    host = np.flatnonzero(is_kind(trace.kind, (CPU_OP, ANNOTATION)))
    category[host] = by_name.take(trace.name_id[host])
    return category


def _sweep(sets: list[Intervals]) -> tuple[np.ndarray, np.ndarray]:
    """Every boundary of the merged `sets` in time order, and the combination (bit i: set i) active
    from each boundary to the next."""
    times, deltas = [], []
    for bit, (s, e) in enumerate(sets):
        both = np.empty(2 * s.size)
        both[0::2], both[1::2] = s, e  # one sorted run per set: the sort below merges runs
        times.append(both)
        deltas.append(np.tile(np.array([1 << bit, -(1 << bit)], np.int64), s.size))
    t = np.concatenate(times)
    order = np.argsort(t, kind="stable")
    return t[order], np.cumsum(np.concatenate(deltas)[order])


def _cover(t: np.ndarray, active: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Per window (row; the windows disjoint and in time order), the time covered by exactly each
    combination (column), as `coverage_by_mask` adds it: the spans between the window's start, the
    boundaries inside it and its end, in time order. Ties between those only add empty spans."""
    after = np.searchsorted(t, lo, side="right")
    before = np.maximum(np.searchsorted(t, hi, side="left"), after)
    two = 2 * np.arange(lo.size)
    start_at, end_at = after + two, before + two + 1  # where the windows' starts and ends go among the boundaries
    points = np.empty(t.size + 2 * lo.size)
    combination = np.zeros(points.size, np.int64)
    boundary = np.ones(points.size, bool)
    boundary[start_at] = boundary[end_at] = False
    points[boundary], points[start_at], points[end_at] = t, lo, hi
    combination[boundary] = active
    combination[start_at] = np.concatenate(([0], active))[after]  # active from the window's start
    edge = np.zeros(points.size, np.int8)
    edge[start_at], edge[end_at] = 1, -1
    inside = np.cumsum(edge)[:-1] == 1  # spans from a window's start up to its end
    window = np.repeat(np.arange(lo.size), end_at - start_at)
    size = 1 << len(CATEGORIES)
    index = window * size + combination[:-1][inside]
    cover = np.bincount(index, weights=np.diff(points)[inside], minlength=lo.size * size)
    return cover.reshape(lo.size, size)
