"""compare_samples: the verdict on two series of times, checked on seeded synthetic samples."""

from __future__ import annotations

import math

import numpy as np
import pytest

from torchdoctor.bench import FASTER, SLOWER, TOO_FEW, UNCLEAR, BenchInputError, compare_samples


def lognormal(median_s: float, sigma: float, n: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).lognormal(np.log(median_s), sigma, n)


def test_a_clear_slowdown_is_called_slower_with_a_ratio_above_one():
    v = compare_samples(lognormal(0.01, 0.03, 20, 1), lognormal(0.012, 0.03, 20, 2))
    assert v.verdict == SLOWER
    assert 1.02 < v.ci_low < v.ratio < v.ci_high
    assert v.ratio == pytest.approx(1.2, abs=0.03)


def test_a_clear_speedup_is_called_faster():
    v = compare_samples(lognormal(0.01, 0.03, 20, 1), lognormal(0.008, 0.03, 20, 2))
    assert v.verdict == FASTER and v.ci_high < 0.98


def test_identical_distributions_give_no_clear_difference():
    v = compare_samples(lognormal(0.01, 0.05, 30, 1), lognormal(0.01, 0.05, 30, 2))
    assert v.verdict == UNCLEAR
    assert v.ci_low < 1.0 < v.ci_high


def test_a_real_effect_smaller_than_the_noise_floor_is_not_claimed():
    a = lognormal(0.01, 0.002, 200, 1)
    b = lognormal(0.0103, 0.002, 200, 2)  # a real 3% slowdown, measured very precisely
    assert compare_samples(a, b, min_effect=0.01).verdict == SLOWER
    assert compare_samples(a, b, min_effect=0.05).verdict == UNCLEAR


def test_fewer_than_five_samples_on_a_side_say_so_and_give_no_interval():
    v = compare_samples([1.0, 1.1, 0.9, 1.0], lognormal(2.0, 0.01, 50, 1))
    assert v.verdict == TOO_FEW
    assert math.isnan(v.ci_low) and math.isnan(v.min_detectable_effect)
    assert v.to_dict()["ci_low"] is None and v.to_dict()["n_a"] == 4


def test_empty_samples_give_too_few_and_no_ratio():
    v = compare_samples([], [1.0] * 10)
    assert v.verdict == TOO_FEW and math.isnan(v.ratio) and v.n_a == 0


@pytest.mark.parametrize("bad", [[1.0, float("nan")], [1.0, -2.0], [0.0, 1.0], [1.0, float("inf")]])
def test_non_finite_or_non_positive_times_are_rejected(bad):
    with pytest.raises(BenchInputError, match="finite and positive"):
        compare_samples([1.0] * 10, bad)


def test_nonsensical_options_are_rejected():
    with pytest.raises(BenchInputError, match="min_effect"):
        compare_samples([1.0] * 10, [1.0] * 10, min_effect=1.5)
    with pytest.raises(BenchInputError, match="confidence"):
        compare_samples([1.0] * 10, [1.0] * 10, confidence=95)


def test_the_same_seed_gives_the_same_interval_and_another_seed_a_close_one():
    a, b = lognormal(0.01, 0.05, 25, 1), lognormal(0.0105, 0.05, 25, 2)
    assert compare_samples(a, b, seed=3) == compare_samples(a, b, seed=3)
    other = compare_samples(a, b, seed=4)
    assert other.ci_low == pytest.approx(compare_samples(a, b, seed=3).ci_low, rel=0.01)


def test_the_minimum_detectable_effect_shrinks_with_more_samples_and_exceeds_the_floor():
    small = compare_samples(lognormal(0.01, 0.05, 10, 1), lognormal(0.01, 0.05, 10, 2))
    large = compare_samples(lognormal(0.01, 0.05, 200, 1), lognormal(0.01, 0.05, 200, 2))
    assert 0.02 < large.min_detectable_effect < small.min_detectable_effect


@pytest.mark.parametrize("n", [5, 10, 20])
def test_without_a_noise_floor_a_versus_a_claims_stay_within_the_confidence(n):
    # 300 seeded A-vs-A comparisons with 5% noise: a calibration check of the bootstrap interval.
    claims = sum(
        compare_samples(lognormal(0.01, 0.05, n, 2 * i), lognormal(0.01, 0.05, n, 2 * i + 1),
                        min_effect=0.0).verdict != UNCLEAR
        for i in range(300)
    )
    assert claims / 300 <= 0.05


def test_long_series_of_per_step_times_are_handled_in_bounded_memory():
    v = compare_samples(lognormal(0.01, 0.05, 5_000, 1), lognormal(0.0115, 0.05, 5_000, 2))
    assert v.verdict == SLOWER and v.n_a == 5_000


def test_paired_samples_need_equal_lengths_and_use_the_median_of_ratios():
    with pytest.raises(BenchInputError, match="equal lengths"):
        compare_samples([1.0] * 6, [1.0] * 7, paired=True)
    a = [1.0, 2.0, 4.0, 8.0, 16.0]
    v = compare_samples(a, [x * 1.5 for x in a], paired=True)
    assert v.ratio == pytest.approx(1.5) and v.verdict == SLOWER
