"""Interval arithmetic (trace/intervals.py)."""

from __future__ import annotations

import numpy as np

from torchdoctor.trace.intervals import coverage_by_mask, length, merge


def test_merge_joins_overlapping_intervals_and_sorts_them() -> None:
    starts, ends = merge(np.array([5.0, 0.0, 1.0, 20.0]), np.array([6.0, 2.0, 3.0, 25.0]))
    assert starts.tolist() == [0.0, 5.0, 20.0] and ends.tolist() == [3.0, 6.0, 25.0]
    assert length((starts, ends)) == 9.0


def test_coverage_by_mask_splits_a_window_into_exclusive_combinations() -> None:
    a = merge(np.array([0.0, 5.0, 20.0]), np.array([3.0, 6.0, 25.0]))
    b = merge(np.array([1.0]), np.array([21.0]))
    cover = coverage_by_mask([a, b], 0.0, 30.0)
    # none: 25-30; only a: 0-1, 21-25; only b: 3-5, 6-20; both: 1-3, 5-6, 20-21.
    assert cover.tolist() == [5.0, 5.0, 16.0, 4.0]
    assert cover.sum() == 30.0


def test_coverage_is_clipped_to_the_window() -> None:
    a = merge(np.array([-10.0]), np.array([10.0]))
    assert coverage_by_mask([a], 0.0, 4.0).tolist() == [0.0, 4.0]
