"""A confirmation's report (tune.confirmation_report): its status, and its precision accounting:
how uncertain the speed-up is, what ended it short of the precision aimed at, and about how many
rounds would have reached it."""

from __future__ import annotations

import math
from typing import Sequence

from torchdoctor.bench import compare_runs
from torchdoctor.record import Record, StepSample
from torchdoctor.tune.config import TuneConfig
from torchdoctor.tune.confirmation_report import confirmation_report, rounds_for_precision
from torchdoctor.tune.interleave import InterleavePlan, Interleaving
from torchdoctor.tune.trial import CONFIRM_BASELINE, CONFIRM_BEST, FAILED, Run

#: Each kept-knobs run's pace relative to x2 (runs of the baseline all alike): +-5 to 8% apart.
SCATTERED = (1.0, 1.08, 0.94, 1.05)


def _run(step_s: float, role: str, n: int) -> Run:
    steps = [StepSample(index=i, wall_s=step_s * (1 + 0.005 * math.sin(i + 3 * n))) for i in range(30)]
    return Run(knobs={}, role=role, step_s=step_s, duration_s=10.0, record=Record(steps=steps))


def _report(factors: Sequence[float], config: TuneConfig) -> dict:
    """The report of a confirmation whose kept-knobs runs took 0.05 s x each factor a step."""
    runs = Interleaving([_run(0.1, CONFIRM_BASELINE, n) for n in range(len(factors))],
                        [_run(0.05 * f, CONFIRM_BEST, n) for n, f in enumerate(factors)])
    verdict = compare_runs([r.times(False) for r in runs.a_runs], [r.times(False) for r in runs.b_runs],
                           min_effect=config.min_effect, tolerance=config.run_tolerance, paired=True)
    plan = InterleavePlan({}, {"zero_grad_set_to_none": True}, (CONFIRM_BASELINE, CONFIRM_BEST), rounds=3,
                          max_rounds=config.confirm_max_rounds, per_sample=False, steps=(30, 30))
    return confirmation_report(runs, plan, verdict, config)


def test_rounds_for_precision_scales_about_with_the_square_of_the_uncertainty() -> None:
    # Twice as wide: about four times the rounds, fewer as more rounds also pin the scatter down
    # (Student's t for 11 degrees of freedom 2.20, for 40 2.02).
    assert rounds_for_precision(12, 0.10, 0.05) == 41
    assert rounds_for_precision(12, 0.15, 0.05) == 89
    assert rounds_for_precision(4, 0.10, 0.05) == 9  # t 3.18 for 4 rounds, 2.31 for 9
    assert rounds_for_precision(12, 0.04, 0.05) is None  # precise already
    assert rounds_for_precision(12, math.inf, 0.05) is None  # one run a side: nothing to scale


def test_a_precise_confirmation_needs_no_more_rounds_and_says_nothing_of_precision() -> None:
    report = _report((1.0, 1.0, 1.0, 1.0), TuneConfig())
    assert report["status"] == "confirmed" and report["precise"] and report["rounds"] == 4
    assert report["half_width"] <= 0.05 and report["rounds_for_precision"] is None
    assert "wider than" not in report["reason"] and report["span_s"] == 80.0


def test_an_imprecise_confirmation_says_its_uncertainty_what_ended_it_and_what_more_would_take() -> None:
    budget_ended = _report(SCATTERED, TuneConfig())
    assert budget_ended["status"] == "confirmed" and not budget_ended["precise"]
    half_width, needed = budget_ended["half_width"], budget_ended["rounds_for_precision"]
    assert half_width > 0.05 and needed == rounds_for_precision(4, half_width, 0.05) and needed > 4
    more_s = (needed - 4) * 80.0 / 4  # at the 20 s a round of two 10 s runs took
    more = f"{more_s / 60:.0f} min" if more_s >= 120 else f"{more_s:.0f} s"
    assert (f"its uncertainty, run to run, is +-{half_width:.0%}, wider than the 5% aimed at: the time budget "
            f"ended it after 4 rounds; about {needed} rounds (~{more} more) would reach it") in budget_ended["reason"]
    at_most = _report(SCATTERED, TuneConfig(confirm_rounds=3, confirm_max_rounds=4))
    assert "its 4 rounds were the most allowed (--confirm-max-rounds)" in at_most["reason"]
    lenient = _report(SCATTERED, TuneConfig(confirm_precision=0.5))
    assert lenient["precise"] and lenient["rounds_for_precision"] is None


def test_a_kept_configuration_failing_when_run_again_is_not_confirmed() -> None:
    config = TuneConfig()
    failed = Run(knobs={"zero_grad_set_to_none": True}, role=CONFIRM_BEST, failure=(FAILED, "exit 1: boom"))
    runs = Interleaving([_run(0.1, CONFIRM_BASELINE, 0)], [failed])
    plan = InterleavePlan({}, {"zero_grad_set_to_none": True}, (CONFIRM_BASELINE, CONFIRM_BEST), rounds=3,
                          max_rounds=12, per_sample=False, steps=(30, 30))
    report = confirmation_report(runs, plan, None, config)
    assert report["status"] == "failed" and report["reason"] == (
        "the kept configuration failed when run again (exit 1: boom)")
    assert report["half_width"] is None and not report["precise"] and report["verdict"] is None
