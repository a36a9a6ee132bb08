"""TD-COMP-046: timed steps that cost more one after the other (work that grows with the run), read
from the step times as a sequence: a steady rise is found, noise and a single stall are not."""

from __future__ import annotations

import random

import pytest

from torchdoctor.record import Record, StepSample
from torchdoctor.rules import diagnose
from torchdoctor.rules.growth import spearman, theil_sen_ends


def _record(walls: list[float]) -> Record:
    return Record(steps=[StepSample(index=i, wall_s=w, data_wait_s=0.0, forward_s=w * 0.5, backward_s=w * 0.4,
                                    optimizer_s=w * 0.1) for i, w in enumerate(walls)])


def _finding(walls: list[float]):
    return next((f for f in diagnose(_record(walls)).findings if f.id == "TD-COMP-046"), None)


def _noisy(values: list[float], seed: int = 0) -> list[float]:
    rng = random.Random(seed)
    return [v * rng.uniform(0.95, 1.05) for v in values]


def test_a_step_that_grows_by_a_fixed_amount_each_step_is_found_with_its_growth():
    walls = _noisy([0.004 + 0.001 * i for i in range(20)])  # a concatenation growing each step
    finding = _finding(walls)
    assert finding is not None and finding.severity == "problem"
    assert finding.evidence["growth"] == pytest.approx(23 / 4, rel=0.15)
    assert finding.upside == pytest.approx(1 - 4 / 23, abs=0.05)
    assert "torch.cat" in finding.fix.code


def test_noisy_steps_without_a_trend_and_a_single_stall_are_not_growth():
    assert _finding(_noisy([0.005] * 20)) is None
    stalled = _noisy([0.005] * 20)
    stalled[-1] = 0.05  # one descheduled step at the end
    assert _finding(stalled) is None


def test_a_slow_rise_under_half_again_is_not_reported():
    assert _finding([0.010 + 0.0002 * i for i in range(20)]) is None  # 1.38x over the window


def test_the_rank_correlation_and_the_robust_line():
    assert spearman([1, 2, 3, 4]) == pytest.approx(1.0) and spearman([4, 3, 2, 1]) == pytest.approx(-1.0)
    assert theil_sen_ends([1, 2, 3, 100, 5]) == pytest.approx((1.0, 5.0))
