"""The time budget (tune.budget): runs planned from the timing runs, the confirmation reserved."""

from __future__ import annotations

from torchdoctor.tune.budget import fits_in_budget, run_estimate, runs_per_trial
from torchdoctor.tune.config import TuneConfig
from torchdoctor.tune.trial import Run


def _runs(*durations: float) -> list[Run]:
    return [Run(knobs={}, role="baseline", duration_s=d) for d in durations]


def test_a_run_is_expected_to_last_as_long_as_the_timing_runs_not_the_profiled_first() -> None:
    assert run_estimate(_runs(30.0, 10.0, 12.0)) == 11.0
    assert run_estimate(_runs(30.0)) == 30.0 and run_estimate([]) == 0.0


def test_more_runs_fit_only_with_the_confirmations_reserve_after_them() -> None:
    config = TuneConfig(time_budget_s=150.0, confirm_rounds=2, confirm_window_s=0.0, confirm_span_s=0.0)
    runs = _runs(30.0, 10.0)  # 40 s spent; a run 10 s; the confirmation's 2 rounds 40 s
    assert runs_per_trial(config) == 3
    assert fits_in_budget(config, runs, 0.0, 7)  # 40 + 70 + 40 = 150
    assert not fits_in_budget(config, runs, 0.0, 8)
    assert not fits_in_budget(config, runs, 120.0, 1)  # the wall clock counts when it ran longer
    # The confirmation's own runs reserve nothing after them.
    assert fits_in_budget(config, runs, 0.0, 11, confirmation=False)
    # Without --time-budget the default budget stops it.
    default = TuneConfig(default_budget_s=150.0, confirm_rounds=2, confirm_window_s=0.0, confirm_span_s=0.0)
    assert fits_in_budget(default, runs, 0.0, 7) and not fits_in_budget(default, runs, 0.0, 8)
    assert TuneConfig().budget_s == TuneConfig().default_budget_s


def test_the_reserve_is_the_confirmations_span_where_that_is_longer() -> None:
    config = TuneConfig(time_budget_s=150.0, confirm_rounds=2, confirm_window_s=0.0, confirm_span_s=100.0)
    assert fits_in_budget(config, _runs(30.0, 10.0), 0.0, 1)  # 40 + 10 + 100
    assert not fits_in_budget(config, _runs(30.0, 10.0), 0.0, 2)
