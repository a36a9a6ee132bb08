"""How `check` plans its rounds once the pilots have shown what a round costs: as many as the budget
holds at that pace, never fewer than `min_rounds`, never more than `max_rounds`."""

from __future__ import annotations

import pytest

from torchdoctor.bench.adaptive import look_schedule
from torchdoctor.workflow.check import CheckOptions


@pytest.mark.parametrize(("round_s", "planned"), [
    (0.5, 400),   # 600 would fit: capped at max_rounds
    (2.0, 150),   # the budget at the pilots' pace
    (100.0, 5),   # 3 would fit: min_rounds, the budget then stops the rounds
])
def test_rounds_are_planned_from_the_budget_and_the_pilots_pace(round_s: float, planned: int) -> None:
    policy = CheckOptions(budget_s=300).policy(300.0, round_s)
    assert policy.max_rounds == planned and policy.budget_s == 300.0
    assert look_schedule(policy)[-1] == planned  # the last look is the last planned round


def test_a_spent_budget_still_plans_min_rounds() -> None:
    assert CheckOptions(min_rounds=5).policy(-3.0, 1.0).max_rounds == 5


def test_max_rounds_caps_the_plan_as_given() -> None:
    assert CheckOptions(max_rounds=40).policy(300.0, 0.1).max_rounds == 40


def test_a_negative_timed_window_is_refused() -> None:
    with pytest.raises(ValueError, match="timed_window_s"):
        CheckOptions(timed_window_s=-1)
