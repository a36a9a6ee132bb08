"""TuneConfig: the confirmation's window in steps, from a configuration's pace, and its span."""

from __future__ import annotations

import pytest

from torchdoctor.tune.config import CONFIRM_MAX_STEPS, TuneConfig


def test_short_steps_are_confirmed_over_the_window_and_long_ones_over_the_trials_steps() -> None:
    config = TuneConfig(timing_steps=20, confirm_window_s=1.0)
    assert config.confirm_steps(0.250) == 20  # 5 s of steps already
    assert config.confirm_steps(0.004) == 250  # 1 s of 4 ms steps
    assert config.confirm_steps(0.0003) == 3334  # 1 s of 0.3 ms steps, not 20x --steps (0.12 s)
    assert config.confirm_steps(0.00001) == CONFIRM_MAX_STEPS  # capped
    assert config.confirm_steps(None) == 20  # no pace measured: the trials' window


def test_a_zero_window_keeps_the_trials_steps_and_a_negative_one_is_refused() -> None:
    assert TuneConfig(timing_steps=20, confirm_window_s=0).confirm_steps(0.001) == 20
    with pytest.raises(ValueError, match="confirm_window_s"):
        TuneConfig(confirm_window_s=-1)


@pytest.mark.parametrize("span", [-1.0, float("nan"), float("inf")])
def test_a_confirmation_span_that_is_not_a_number_of_seconds_is_refused(span: float) -> None:
    with pytest.raises(ValueError, match="confirm_span_s"):
        TuneConfig(confirm_span_s=span)


def test_fewer_than_two_warm_up_steps_are_refused_before_any_run() -> None:
    # Step detection settles during the first two steps: one warm-up step failed inside the
    # first run, a traceback instead of a usage error.
    with pytest.raises(ValueError, match="warmup_steps must be >= 2, got 1"):
        TuneConfig(warmup_steps=1)
