"""Interval arithmetic on numpy arrays: unions, clipping, and time covered by each combination.

An interval set is a pair of float64 arrays (starts, ends) in microseconds. `merge` makes it a
sorted union of disjoint intervals (HTA's `merge_kernel_intervals`, without pandas).

The `run_*` functions do one step's arithmetic for many steps at once (hundreds of steps, each a
few numpy calls, cost more in calls than in work): rows come grouped into runs, `run[k]` the index
of the window [lo, hi) row k belongs to, and each run's figure has the bits the one-window
functions give it (sums over one run are numpy sums of that run's values alone, in their order).
"""

from __future__ import annotations

import numpy as np

Intervals = tuple[np.ndarray, np.ndarray]
EMPTY: Intervals = (np.zeros(0), np.zeros(0))


def merge(starts: np.ndarray, ends: np.ndarray) -> Intervals:
    """Union of the intervals as sorted, disjoint, non-touching intervals."""
    if starts.size == 0:
        return EMPTY
    s, e = starts, ends
    if not (starts[1:] >= starts[:-1]).all():  # most callers pass rows in start order: a check is 2-6x cheaper
        order = np.argsort(starts, kind="stable")
        s, e = starts[order], ends[order]
    running_end = np.maximum.accumulate(e)
    new_group = np.empty(s.size, bool)
    new_group[0] = True
    new_group[1:] = s[1:] > running_end[:-1]
    return s[new_group], np.maximum.reduceat(e, np.flatnonzero(new_group))


def clip(intervals: Intervals, lo: float, hi: float) -> Intervals:
    """The part of a merged set inside [lo, hi)."""
    s, e = intervals
    keep = (e > lo) & (s < hi)
    return np.clip(s[keep], lo, hi), np.clip(e[keep], lo, hi)


def length(intervals: Intervals) -> float:
    s, e = intervals
    return float((e - s).sum())


def coverage_by_mask(sets: list[Intervals], lo: float, hi: float) -> np.ndarray:
    """Time in [lo, hi) covered by exactly each combination of the merged sets.

    Returns an array of 2**len(sets) floats: entry m is the time during which set i is active
    exactly when bit i of m is set (entry 0 is the time covered by none).
    """
    times, deltas = [np.array([lo, hi])], [np.array([0, 0], np.int64)]
    for bit, merged in enumerate(sets):
        s, e = clip(merged, lo, hi)
        times += [s, e]
        deltas += [np.full(s.size, 1 << bit, np.int64), np.full(e.size, -(1 << bit), np.int64)]
    t, d = np.concatenate(times), np.concatenate(deltas)
    order = np.argsort(t, kind="stable")
    t, d = t[order], d[order]
    mask = np.cumsum(d)
    spans = np.diff(t)
    return np.bincount(mask[:-1], weights=spans, minlength=1 << len(sets))


def intersect(a: Intervals, b: Intervals) -> Intervals:
    """The merged set of times in both `a` and `b` (its intervals of positive length).

    Each overlapping pair of a's and b's intervals gives one interval; two cannot touch, as the
    intervals of a merged set do not. Found by binary search, not by sorting both sets' ends
    together: that sort cost most of the window's figures (trace/analyses/window.py)."""
    (sa, ea), (sb, eb) = merge(*a), merge(*b)
    first = np.searchsorted(eb, sa, side="right")  # b's intervals ending after each of a's starts...
    i, j = expand_ranges(first, np.searchsorted(sb, ea, side="left") - first)  # ...and starting before it ends
    s, e = np.maximum(sa[i], sb[j]), np.minimum(ea[i], eb[j])
    keep = e > s
    return s[keep], e[keep]


def subtract(a: Intervals, b: Intervals) -> Intervals:
    """The merged set of times in `a` and not in `b` (its intervals of positive length): each of a's
    intervals cut at the b intervals inside it, by binary search as in `intersect`."""
    (sa, ea), (sb, eb) = merge(*a), merge(*b)
    sb, eb = sb[eb > sb], eb[eb > sb]  # an instant removes no time
    first = np.searchsorted(eb, sa, side="right")
    cuts = np.maximum(np.searchsorted(sb, ea, side="left") - first, 0)
    i, j = expand_ranges(first, cuts + 1)  # gap k of a's interval i ends where b's interval first + k starts
    sb, eb = np.append(sb, 0.0), np.append(eb, 0.0)  # j - 1 and j stay valid indices where unused
    s = np.where(j == first[i], sa[i], eb[j - 1])
    e = np.where(j < first[i] + cuts[i], sb[j], ea[i])
    keep = e > s
    return s[keep], e[keep]


def expand_ranges(first: np.ndarray, count: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The index ranges [first[k], first[k] + count[k]) laid end to end (a count below 0 is 0), and
    the k of each: one numpy pass where a loop over the ranges would make one call per range."""
    count = np.maximum(count, 0)
    owner = np.repeat(np.arange(first.size), count)
    return owner, np.arange(owner.size) + np.repeat(first - (np.cumsum(count) - count), count)


def overlap_lengths(merged: Intervals, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """For each [lo[i], hi[i]), the time the merged set covers inside it."""
    s, e = merged
    if s.size == 0:
        return np.zeros(np.asarray(lo).size)
    before = np.concatenate([[0.0], np.cumsum(e - s)])  # covered time before each interval's start

    def covered_until(t: np.ndarray) -> np.ndarray:
        k = np.searchsorted(s, t, side="right")  # intervals starting at or before t
        last = np.clip(k - 1, 0, None)
        partial = np.where(k > 0, np.clip(t - s[last], 0.0, e[last] - s[last]), 0.0)
        return before[np.clip(k - 1, 0, None)] * (k > 0) + partial

    return covered_until(np.asarray(hi, float)) - covered_until(np.asarray(lo, float))


def run_sums(values: np.ndarray, run: np.ndarray, runs_count: int) -> list[float]:
    """Each run's `values` summed (runs ascending): a numpy sum of the run's slice, the pairwise
    summation a per-window `.sum()` does, where one bincount or reduceat would add in another order."""
    bounds = np.searchsorted(run, np.arange(runs_count + 1)).tolist()
    return [float(values[a:b].sum()) for a, b in zip(bounds[:-1], bounds[1:])]


def run_merge_starts(starts: np.ndarray, cut_ends: np.ndarray, run: np.ndarray) -> np.ndarray:
    """Indices of the rows at which `merge` of each run's intervals begins a new interval.

    Rows are grouped by run (ascending), each run in start order, every row starting inside its
    window, each window starting at or after the end of the windows before it (steps.batches), and
    `cut_ends` the rows' ends cut at their window's end. Then one running maximum over all runs
    does the work of one per run: the cut changes none of merge's decisions (every start is below
    it) and keeps a run's reach out of the next run's window."""
    if starts.size == 0:
        return np.zeros(0, np.int64)
    reach = np.maximum.accumulate(cut_ends)
    new = np.empty(starts.size, bool)
    new[0] = True
    new[1:] = (starts[1:] > reach[:-1]) | (run[1:] != run[:-1])
    return np.flatnonzero(new)


def run_lengths(starts: np.ndarray, ends: np.ndarray, run: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> list[float]:
    """For each window i, `length(clip(merge(starts[run == i], ends[run == i]), lo[i], hi[i]))` with
    its bits (rows as `run_merge_starts` takes them)."""
    if starts.size == 0:
        return [0.0] * lo.size
    cut = np.minimum(ends, hi[run])  # what clip does to a merged end, the starts being inside
    first = run_merge_starts(starts, cut, run)
    s, e, r = starts[first], np.maximum.reduceat(cut, first), run[first]
    keep = e > lo[r]  # clip drops an interval that only touches the window's start
    return run_sums(e[keep] - s[keep], r[keep], lo.size)
