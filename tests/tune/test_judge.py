"""Judging a trial (tune.judge): which run its numerics are compared with, how, and the status
and reason its verdict and checks give it."""

from __future__ import annotations

import math
from typing import Any

from torchdoctor.bench import compare_runs
from torchdoctor.knobs import REGISTRY
from torchdoctor.record import Record, StepSample
from torchdoctor.tune.judge import check_numerics, judge, numerics_reference
from torchdoctor.tune.state import ScriptNoise, TuneState
from torchdoctor.tune.trial import ACCEPTED, FAILED, REJECTED, Run, Trial


def _loss_run(knobs: dict[str, Any], shift: int, *, timing_steps: int = 0) -> Run:
    """A run whose step i has the loss of batch i + shift (another shuffle: `shift` != 0)."""
    steps = [StepSample(index=i, wall_s=0.1, loss=1.0 + 0.2 * math.sin(i + shift)) for i in range(30)]
    return Run(knobs=knobs, role="candidate", record=Record(steps=steps), timing_steps=timing_steps)


def _timed_run(step_s: float, role: str) -> Run:
    steps = [StepSample(index=i, wall_s=step_s * (1 + 0.01 * math.sin(i)), loss=1.0) for i in range(30)]
    return Run(knobs={}, role=role, step_s=step_s, record=Record(steps=steps))


def _verdict(a_step_s: float, b_step_s: float) -> Any:
    a_runs = [_timed_run(a_step_s, "reference") for _ in range(2)]
    b_runs = [_timed_run(b_step_s, "candidate") for _ in range(2)]
    verdict = compare_runs([r.times(False) for r in a_runs], [r.times(False) for r in b_runs], min_effect=0.02,
                           tolerance=0.15, paired=True)
    return verdict, b_runs


def test_a_knob_tried_on_top_of_kept_workers_is_not_compared_step_by_step_with_other_batches() -> None:
    """persistent_workers draws the workers' seeds once instead of every epoch, so the shuffles
    differ from the baseline's after the first epoch; prefetch_factor tried on top of it sees those
    batches too, and must be judged as a changed data stream, not step by step."""
    reference, repeats = _loss_run({}, 0), ScriptNoise(deterministic=True)
    prefetch = REGISTRY["prefetch_factor"]
    on_top = check_numerics(prefetch, _loss_run({"persistent_workers": True, "prefetch_factor": 4}, 1), reference,
                            repeats)
    assert on_top.ok and on_top.method == "loss, window mean", on_top
    alone = check_numerics(prefetch, _loss_run({"prefetch_factor": 4}, 1), reference, repeats)
    assert not alone.ok and alone.method == "loss, step by step"  # alone it cannot change the batches


def test_numerics_are_compared_with_a_run_of_the_best_configuration_that_timed_the_trials_window() -> None:
    runs = [_loss_run({}, 0), _loss_run({}, 0, timing_steps=30)]
    baseline = Trial(index=0, knob=None, value=None, knobs={}, runs=runs)
    state = TuneState(baseline=baseline, trial_steps=30)
    assert numerics_reference(state) is baseline.runs[1]  # the first timed another window
    best_run = _loss_run({"channels_last": True}, 0, timing_steps=30)
    state.best = Trial(index=1, knob="channels_last", value=True, knobs={"channels_last": True}, runs=[best_run])
    assert numerics_reference(state) is best_run
    state.trial_steps = 60  # no run timed it: the baseline's first
    assert numerics_reference(state) is baseline.runs[0]


def _trial(knob: str, numerics: dict[str, Any] | None) -> Trial:
    return Trial(index=1, knob=knob, value=True, knobs={knob: True}, status=REJECTED, numerics=numerics)


def test_a_faster_value_with_sound_numerics_is_accepted_and_says_how_it_was_decided() -> None:
    verdict, runs = _verdict(0.1, 0.05)
    trial = _trial("zero_grad_set_to_none", {"ok": True, "checked": True, "reason": "mean loss moved 0.00%"})
    trial.runs = runs
    judge(trial, REGISTRY["zero_grad_set_to_none"], verdict, accept_unchecked=False)
    assert trial.status == ACCEPTED and trial.ratio == verdict.verdict.ratio
    assert trial.reason.startswith("faster side by side: x2.00 (") and trial.reason.endswith("; mean loss moved 0.00%")


def test_a_precision_knob_faster_with_its_numerics_unchecked_is_rejected_unless_accepted_unchecked() -> None:
    verdict, runs = _verdict(0.1, 0.05)
    unchecked = {"ok": True, "checked": False, "reason": "no loss recorded: numerics not checked"}
    trial = _trial("compile", unchecked)
    trial.runs = runs
    judge(trial, REGISTRY["compile"], verdict, accept_unchecked=False)
    assert trial.status == REJECTED and "is not kept unchecked" in trial.reason
    judge(trial, REGISTRY["compile"], verdict, accept_unchecked=True)
    assert trial.status == ACCEPTED


def test_a_failed_run_fails_the_trial_and_failed_numerics_reject_it_before_any_speed_is_read() -> None:
    verdict, runs = _verdict(0.1, 0.05)
    failed = _trial("channels_last", None)
    failed.runs = [Run(knobs={"channels_last": True}, role="candidate", failure=(FAILED, "exit 1: boom"))]
    judge(failed, REGISTRY["channels_last"], None, accept_unchecked=False)
    assert (failed.status, failed.reason) == (FAILED, "exit 1: boom")
    wrong = _trial("channels_last", {"ok": False, "checked": True, "reason": "mean loss moved 9%"})
    wrong.runs = runs
    judge(wrong, REGISTRY["channels_last"], verdict, accept_unchecked=False)
    assert (wrong.status, wrong.reason) == (REJECTED, "numerics: mean loss moved 9%")
