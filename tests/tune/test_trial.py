"""A trial's speed-up interval and the words that say where it came from (tune.trial)."""

from __future__ import annotations

import numpy as np
import pytest

from torchdoctor.bench import compare_runs
from torchdoctor.tune.trial import interval_source, speedup_interval


def _run(mean: float, seed: int, n: int = 30) -> list[float]:
    return list(mean * (1 + 0.02 * np.random.default_rng(seed).standard_normal(n)))


def _rounds(a_means: tuple[float, ...], b_means: tuple[float, ...]) -> tuple[list[list[float]], list[list[float]]]:
    return ([_run(m, seed=i) for i, m in enumerate(a_means)],
            [_run(m, seed=100 + i) for i, m in enumerate(b_means)])


def test_a_few_rounds_that_agree_give_the_ci_across_runs_and_say_it_is_widened_by_their_scatter() -> None:
    a, b = _rounds((0.100, 0.104, 0.098, 0.101), (0.050, 0.049, 0.052, 0.050))
    verdict = compare_runs(a, b, paired=True).to_dict()
    low, high = verdict["ci_across_runs"]
    assert speedup_interval(verdict) == pytest.approx([1 / high, 1 / low])
    assert 1 / high < 1 / verdict["ratio"] < 1 / low
    assert interval_source(verdict) == ("the bootstrap of each run's steps, widened by the scatter between rounds")


def test_one_run_a_side_falls_back_to_the_bootstrap_and_says_so() -> None:
    verdict = compare_runs([_run(0.1, seed=1)], [_run(0.05, seed=2)]).to_dict()
    assert verdict["ci_across_runs"] is None
    assert speedup_interval(verdict) == pytest.approx([1 / verdict["ci_high"], 1 / verdict["ci_low"]])
    assert "widened" not in interval_source(verdict) and "alone" in interval_source(verdict)


def test_runs_too_noisy_to_agree_are_said_to_be_read_by_their_ranks() -> None:
    a, b = _rounds((0.10, 0.16, 0.12), (0.05, 0.08, 0.06))
    verdict = compare_runs(a, b).to_dict()
    assert verdict["separated"]
    assert speedup_interval(verdict) == pytest.approx([1 / verdict["ci_high"], 1 / verdict["ci_low"]])
    assert interval_source(verdict).startswith("the runs' ranks") and "widened" not in interval_source(verdict)


def test_no_verdict_has_no_interval() -> None:
    assert speedup_interval(None) is None
    assert "alone" in interval_source(None)


def test_enough_rounds_give_the_interval_of_their_own_scatter_and_say_so() -> None:
    a, b = _rounds((0.100, 0.104, 0.098, 0.101, 0.099, 0.102), (0.050, 0.049, 0.052, 0.050, 0.051, 0.050))
    verdict = compare_runs(a, b, paired=True).to_dict()
    assert verdict["from_scatter"]
    low, high = verdict["ci_across_runs"]
    assert speedup_interval(verdict) == pytest.approx([1 / high, 1 / low])
    assert interval_source(verdict).startswith("the scatter between rounds")
