"""Interval arithmetic on numpy arrays: unions, clipping, and time covered by each combination.

An interval set is a pair of float64 arrays (starts, ends) in microseconds. `merge` makes it a
sorted union of disjoint intervals (HTA's `merge_kernel_intervals`, without pandas).
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
    """The merged set of times in both `a` and `b`."""
    return _select(a, b, both=True)


def subtract(a: Intervals, b: Intervals) -> Intervals:
    """The merged set of times in `a` and not in `b`."""
    return _select(a, b, both=False)


def _select(a: Intervals, b: Intervals, *, both: bool) -> Intervals:
    a, b = merge(*a), merge(*b)
    if a[0].size == 0:
        return EMPTY
    t = np.concatenate([a[0], a[1], b[0], b[1]])
    na, nb = a[0].size, b[0].size
    da = np.concatenate([np.ones(na, np.int64), -np.ones(na, np.int64), np.zeros(2 * nb, np.int64)])
    db = np.concatenate([np.zeros(2 * na, np.int64), np.ones(nb, np.int64), -np.ones(nb, np.int64)])
    order = np.argsort(t, kind="stable")
    t, in_a, in_b = t[order], np.cumsum(da[order]) > 0, np.cumsum(db[order]) > 0
    keep = (in_a & in_b if both else in_a & ~in_b)[:-1] & (t[1:] > t[:-1])
    return merge(t[:-1][keep], t[1:][keep])


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
