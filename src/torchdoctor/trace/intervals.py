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
