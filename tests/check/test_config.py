"""The check's options: how `check` plans its rounds once the pilots have shown what a round costs
(as many as the budget holds at that pace, never fewer than `min_rounds`, never more than
`max_rounds`), what it refuses, and its settings as the result reports them."""

from __future__ import annotations

from dataclasses import replace

import pytest

from torchdoctor.bench.adaptive import look_schedule
from torchdoctor.check.config import DEFAULT_POLICY, CheckOptions


@pytest.mark.parametrize(("round_s", "planned"), [
    (0.5, 400),   # 600 would fit: capped at max_rounds
    (2.0, 150),   # the budget at the pilots' pace
    (100.0, 5),   # 3 would fit: min_rounds, the budget then stops the rounds
])
def test_rounds_are_planned_from_the_budget_and_the_pilots_pace(round_s: float, planned: int) -> None:
    policy = CheckOptions(policy=replace(DEFAULT_POLICY, budget_s=300)).planned(300.0, round_s)
    assert policy.max_rounds == planned and policy.budget_s == 300.0
    assert look_schedule(policy)[-1] == planned  # the last look is the last planned round


def test_a_spent_budget_still_plans_min_rounds() -> None:
    assert CheckOptions(policy=replace(DEFAULT_POLICY, min_rounds=5)).planned(-3.0, 1.0).max_rounds == 5


def test_max_rounds_caps_the_plan_as_given() -> None:
    assert CheckOptions(policy=replace(DEFAULT_POLICY, max_rounds=40)).planned(300.0, 0.1).max_rounds == 40


def test_a_negative_timed_window_is_refused() -> None:
    with pytest.raises(ValueError, match="timed_window_s"):
        CheckOptions(timed_window_s=-1)


def test_a_noise_floor_at_or_beyond_the_allowed_slowdown_is_refused() -> None:
    with pytest.raises(ValueError, match="min_effect"):
        CheckOptions(max_slowdown=0.05, policy=replace(DEFAULT_POLICY, min_effect=0.05))


def test_the_settings_name_every_option_flat_in_the_results_order() -> None:
    settings = CheckOptions().settings()
    assert list(settings) == ["max_slowdown", "max_memory_growth", "budget_s", "warmup_steps", "steps",
                              "timed_window_s", "min_rounds", "max_rounds", "min_effect", "confidence", "aa_control",
                              "seed", "timeout_s", "memory", "locate", "fork_server", "same_cwd"]
    assert settings["budget_s"] == 300.0 and settings["max_rounds"] == 400 and settings["min_effect"] == 0.02
