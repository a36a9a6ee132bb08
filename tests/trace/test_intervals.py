"""Interval arithmetic (trace/intervals.py)."""

from __future__ import annotations

import numpy as np

from torchdoctor.trace.intervals import (
    EMPTY, clip, coverage_by_mask, expand_ranges, intersect, length, merge, run_lengths, run_merge_starts, run_sums,
    subtract,
)


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


def test_intersect_keeps_the_time_in_both_sets_and_drops_single_instants() -> None:
    a = merge(np.array([0.0, 10.0, 20.0]), np.array([5.0, 15.0, 20.0]))  # [20, 20]: an instant
    b = merge(np.array([3.0, 5.0, 12.0, 20.0]), np.array([4.0, 11.0, 30.0, 20.0]))
    s, e = intersect(a, b)
    assert s.tolist() == [3.0, 10.0, 12.0] and e.tolist() == [4.0, 11.0, 15.0]  # [5, 5] touches only


def test_subtract_cuts_each_interval_at_the_other_sets_intervals() -> None:
    a = merge(np.array([0.0, 20.0]), np.array([10.0, 30.0]))
    b = merge(np.array([-5.0, 4.0, 6.0, 25.0, 28.0]), np.array([2.0, 4.0, 7.0, 26.0, 40.0]))  # [4, 4] removes nothing
    s, e = subtract(a, b)
    assert s.tolist() == [2.0, 7.0, 20.0, 26.0] and e.tolist() == [6.0, 10.0, 25.0, 28.0]
    assert subtract(a, EMPTY)[0].tolist() == [0.0, 20.0] and subtract(EMPTY, a)[0].size == 0


def test_expand_ranges_lays_index_ranges_end_to_end() -> None:
    owner, index = expand_ranges(np.array([5, 0, 2]), np.array([2, -1, 3]))
    assert owner.tolist() == [0, 0, 2, 2, 2] and index.tolist() == [5, 6, 2, 3, 4]


def test_run_sums_add_each_run_as_numpy_sums_it_alone() -> None:
    values = np.random.default_rng(0).random(1000) * 10.0 ** np.random.default_rng(1).integers(-8, 8, 1000)
    run = np.repeat([0, 2, 3], [10, 500, 490])
    sums = run_sums(values, run, 5)
    assert sums[1] == sums[4] == 0.0
    assert sums[0] == values[:10].sum() and sums[2] == values[10:510].sum() and sums[3] == values[510:].sum()


def test_run_merge_starts_begins_an_interval_where_merge_would_and_at_every_run() -> None:
    starts, ends = np.array([0.0, 1.0, 3.0, 10.0, 10.5]), np.array([2.0, 9.0, 4.0, 11.0, 12.0])
    run, hi = np.array([0, 0, 0, 1, 1]), np.array([10.0, 20.0])
    assert run_merge_starts(starts, np.minimum(ends, hi[run]), run).tolist() == [0, 3]


def test_run_lengths_are_the_clipped_union_of_each_window_bit_for_bit() -> None:
    rng = np.random.default_rng(2)
    lo = np.array([0.0, 100.0, 100.5, 300.0])  # back to back, a step with no rows, a gap
    hi = np.array([100.0, 100.5, 250.0, 400.0])
    starts, ends, run = [], [], []
    for i in range(lo.size):
        s = np.sort(np.concatenate([rng.uniform(lo[i], hi[i], 40), [lo[i]] * (i != 1)]))
        if i == 1:
            s = s[:0]
        starts.append(s)
        ends.append(s + np.where(rng.random(s.size) < 0.2, 0.0, rng.exponential(0.1 * (hi[i] - lo[i]), s.size)))
        run.append(np.full(s.size, i))
    starts, ends, run = np.concatenate(starts), np.concatenate(ends), np.concatenate(run)
    got = run_lengths(starts, ends, run, lo, hi)
    want = [length(clip(merge(starts[run == i], ends[run == i]), lo[i], hi[i])) for i in range(lo.size)]
    assert got == want and got[1] == 0.0
