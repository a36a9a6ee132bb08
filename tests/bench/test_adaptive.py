"""run_interleaved: rounds in random order, A-vs-A control, looks, budget; with synthetic samples."""

from __future__ import annotations

import time

import numpy as np
import pytest

from torchdoctor.bench import SLOWER, UNCLEAR, BenchInputError, Policy, control_name, run_interleaved
from torchdoctor.bench import compare_samples
from torchdoctor.bench.adaptive import is_settled, look_schedule


class Synthetic:
    """A measure() drawing seeded lognormal times around a median per variant, logging calls."""

    def __init__(self, medians_s: dict[str, float], sigma: float = 0.02, seed: int = 0):
        self.medians_s, self.sigma = medians_s, sigma
        self.rng = np.random.default_rng(seed)
        self.calls: list[str] = []

    def __call__(self, name: str) -> float:
        self.calls.append(name)
        return float(self.rng.lognormal(np.log(self.medians_s[name]), self.sigma))


def test_a_large_slowdown_settles_at_the_first_look():
    measure = Synthetic({"A": 0.01, "B": 0.015})
    result = run_interleaved(measure, ["A", "B"], policy=Policy(min_rounds=5, max_rounds=40))
    assert result.stop_reason == "settled" and result.rounds == 5
    assert result.verdicts["B"].verdict == SLOWER


def test_the_control_slot_measures_the_baseline_again_and_sets_the_floor():
    measure = Synthetic({"A": 0.01, "B": 0.015})
    result = run_interleaved(measure, ["A", "B"], policy=Policy(min_rounds=5, max_rounds=5))
    assert measure.calls.count("A") == 10 and measure.calls.count("B") == 5
    assert len(result.samples_s[control_name("A")]) == 5
    assert result.noise_floor == max(0.02, abs(result.aa_ratio - 1))


def test_without_the_control_the_floor_is_the_minimum_effect():
    measure = Synthetic({"A": 0.01, "B": 0.01})
    result = run_interleaved(measure, ["A", "B"], policy=Policy(aa_control=False, min_effect=0.03))
    assert result.aa_ratio is None and result.noise_floor == 0.03
    assert measure.calls.count("A") == measure.calls.count("B")


def test_each_round_measures_every_slot_once_in_a_seeded_order_that_varies():
    measure = Synthetic({"A": 0.01, "B": 0.01, "C": 0.01})
    run_interleaved(measure, ["A", "B", "C"], policy=Policy(min_rounds=8, max_rounds=8, aa_control=False))
    rounds = [tuple(measure.calls[i : i + 3]) for i in range(0, 24, 3)]
    assert all(sorted(r) == ["A", "B", "C"] for r in rounds)
    assert len(set(rounds)) > 1
    again = Synthetic({"A": 0.01, "B": 0.01, "C": 0.01})
    run_interleaved(again, ["A", "B", "C"], policy=Policy(min_rounds=8, max_rounds=8, aa_control=False))
    assert again.calls == measure.calls


def test_an_undecided_comparison_runs_on_until_max_rounds():
    # A true 2.5% slowdown with 8% noise and a 2% floor: not settled within 12 rounds.
    measure = Synthetic({"A": 0.01, "B": 0.01025}, sigma=0.08)
    result = run_interleaved(measure, ["A", "B"], policy=Policy(min_rounds=5, max_rounds=12))
    assert result.rounds == 12 and result.stop_reason == "max_rounds"
    assert result.verdicts["B"].verdict == UNCLEAR


def test_the_budget_stops_the_rounds_and_too_few_rounds_are_reported():
    def slow(name: str) -> float:
        time.sleep(0.02)
        return 0.02

    result = run_interleaved(slow, ["A", "B"], policy=Policy(budget_s=0.1, aa_control=False))
    assert result.stop_reason == "budget" and result.rounds < 5
    assert "raise the budget" in result.warnings[0]
    assert result.verdicts["B"].verdict.endswith("(too few samples)")


def test_looks_grow_geometrically_and_each_uses_a_bonferroni_share_of_the_error():
    policy = Policy(min_rounds=5, max_rounds=40)
    assert look_schedule(policy) == [5, 8, 12, 18, 27, 40]
    result = run_interleaved(Synthetic({"A": 1.0, "B": 2.0, "C": 2.0}), ["A", "B", "C"], policy=policy)
    assert result.look_confidence == pytest.approx(1 - 0.05 / (6 * 2))


def test_variants_need_two_distinct_names_and_a_sane_policy():
    with pytest.raises(BenchInputError, match="distinct names"):
        run_interleaved(Synthetic({"A": 1.0}), ["A", "A"], policy=Policy())
    with pytest.raises(BenchInputError, match="min_rounds"):
        Policy(min_rounds=10, max_rounds=5)


def test_the_result_serialises_with_medians_samples_and_verdicts():
    result = run_interleaved(Synthetic({"A": 0.01, "B": 0.02}), ["A", "B"], policy=Policy(), label="N=8")
    data = result.to_dict()
    assert data["label"] == "N=8" and data["baseline"] == "A"
    assert set(data["median_s"]) == {"A", "B", control_name("A")}
    assert data["verdicts"]["B"]["verdict"] == SLOWER


def test_a_ci_inside_the_minimum_effect_band_settles_but_one_inside_only_a_wide_floor_does_not():
    rng = np.random.default_rng(0)
    a, b = rng.lognormal(0, 0.002, 100), rng.lognormal(0, 0.002, 100)
    assert is_settled(compare_samples(a, b, min_effect=0.02), min_effect=0.02)
    wide = compare_samples(rng.lognormal(0, 0.1, 8), rng.lognormal(0, 0.1, 8), min_effect=0.5)
    assert wide.verdict == UNCLEAR and not is_settled(wide, min_effect=0.02)


def test_paired_rounds_cancel_a_machine_state_shared_by_both_variants():
    # Each round runs at 1x or 2x speed (another tenant), B is 10% slower within every round.
    state = np.random.default_rng(1).choice([1.0, 2.0], size=40)
    a, b = 0.01 * state, 0.011 * state
    assert compare_samples(a, b, paired=True).verdict == SLOWER
    assert compare_samples(a, b).verdict == UNCLEAR


def test_a_caller_may_settle_on_its_own_test():
    measure = Synthetic({"A": 0.01, "B": 0.0102}, sigma=0.05)
    looked: list[int] = []

    def settled(verdict) -> bool:  # never settled before round 8
        looked.append(verdict.n_b)
        return verdict.n_b >= 8

    result = run_interleaved(measure, ["A", "B"], policy=Policy(min_rounds=5, max_rounds=40), settled=settled)
    assert result.stop_reason == "settled" and result.rounds == 8
    assert looked[:2] == [5, 8]


def test_ctrl_c_ends_the_loop_with_the_complete_rounds_when_asked():
    inner = Synthetic({"A": 0.01, "B": 0.02})

    def measure(name: str) -> float:
        if len(inner.calls) == 3 * 6 + 1:  # the 7th round is cut short after its first slot
            raise KeyboardInterrupt
        return inner(name)

    result = run_interleaved(measure, ["A", "B"], policy=Policy(min_rounds=40, max_rounds=40), stop_on_interrupt=True)
    assert result.stop_reason == "interrupted" and result.rounds == 6
    assert {len(v) for v in result.samples_s.values()} == {6}
    assert result.verdicts["B"].verdict == SLOWER and not result.warnings
    with pytest.raises(KeyboardInterrupt):
        inner.calls.clear()
        run_interleaved(measure, ["A", "B"], policy=Policy(min_rounds=40, max_rounds=40))
