"""compare_runs: the decision on whole runs measured in interleaved rounds (the tuner's)."""

from __future__ import annotations

import numpy as np

from torchdoctor.bench import FASTER, UNCLEAR, agreeing_runs, compare_runs


def _run(median: float, n: int = 20, seed: int = 0, noise: float = 0.02) -> list[float]:
    rng = np.random.default_rng(seed)
    return list(median * (1 + noise * rng.standard_normal(n)).clip(0.5))


def test_the_largest_group_of_agreeing_runs_is_kept_and_a_slow_outlier_left_out() -> None:
    assert agreeing_runs([0.1, 0.5, 0.102]) == [0, 2]
    assert agreeing_runs([0.5, 0.1]) == [1]  # two that disagree: the faster one, not corroborated
    assert agreeing_runs([0.1, 0.3, 0.31]) == [1, 2]  # the majority, even when slower


def test_a_disturbed_reference_run_is_never_divided_by() -> None:
    # The first A run ran 5x slower (another process on the cores); the second agrees with a third.
    a = [_run(0.5, seed=1), _run(0.1, seed=2), _run(0.101, seed=3)]
    b = [_run(0.05, seed=4), _run(0.051, seed=5), _run(0.05, seed=6)]
    result = compare_runs(a, b)
    assert result.a_kept == [1, 2] and result.corroborated and result.disturbed == 1
    assert result.verdict.verdict == FASTER
    assert 0.45 < result.verdict.ratio < 0.55  # x2, not x10


def test_two_runs_that_disagree_are_not_corroborated() -> None:
    result = compare_runs([_run(0.5), _run(0.1, seed=1)], [_run(0.05, seed=2), _run(0.05, seed=3)])
    assert not result.corroborated


def test_run_to_run_spread_becomes_the_noise_floor() -> None:
    a = [_run(0.100, seed=1), _run(0.112, seed=2)]  # 12% apart: kept, but that much noise
    b = [_run(0.095, seed=3), _run(0.105, seed=4)]
    result = compare_runs(a, b, min_effect=0.02)
    assert result.verdict.noise_floor > 0.1
    assert result.verdict.verdict == UNCLEAR


def test_identical_configurations_give_no_clear_difference() -> None:
    a = [_run(0.1, seed=s) for s in (1, 2)]
    b = [_run(0.1, seed=s) for s in (3, 4)]
    assert compare_runs(a, b).verdict.verdict == UNCLEAR


def test_runs_that_disagree_are_decided_only_by_complete_separation() -> None:
    a = [_run(0.10, seed=1), _run(0.13, seed=2), _run(0.17, seed=3)]  # no two within 15%
    b = [_run(0.05, seed=4), _run(0.065, seed=5), _run(0.085, seed=6)]
    result = compare_runs(a, b)
    assert not result.corroborated and result.separated and result.decided
    assert result.verdict.verdict == FASTER and result.verdict.ci_high < 1
    overlapping = [_run(0.05, seed=4), _run(0.065, seed=5), _run(0.12, seed=6)]  # one run beside A's
    result = compare_runs(a, overlapping)
    assert not result.decided and result.verdict.verdict == UNCLEAR
    assert not compare_runs(a[:2], b[:2]).decided  # two runs a side: too few for separation
