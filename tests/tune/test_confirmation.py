"""A stop before or during the confirmation (tune.confirmation.unconfirmed): the best so far is
reported unconfirmed, with an estimate from what was measured."""

from __future__ import annotations

import math

import pytest

from torchdoctor.record import Record, StepSample
from torchdoctor.tune.config import TuneConfig
from torchdoctor.tune.confirmation import unconfirmed
from torchdoctor.tune.interleave import Interleaving
from torchdoctor.tune.state import TuneState
from torchdoctor.tune.trial import CONFIRM_BASELINE, CONFIRM_BEST, KEPT, Run, Trial

KEPT_KNOBS = {"zero_grad_set_to_none": True, "channels_last": True}


def _run(knobs: dict, step_s: float, role: str) -> Run:
    steps = [StepSample(index=i, wall_s=step_s * (1 + 0.01 * math.sin(i))) for i in range(30)]
    return Run(knobs=dict(knobs), role=role, step_s=step_s, duration_s=2.0, record=Record(steps=steps))


def _state() -> TuneState:
    """Two kept trials, x2 and x1.25 side by side."""
    state = TuneState(baseline=Trial(index=0, knob=None, value=None, knobs={}), trial_steps=30)
    for index, (knob, ratio) in enumerate((("zero_grad_set_to_none", 0.5), ("channels_last", 0.8)), start=1):
        state.trials.append(Trial(index=index, knob=knob, value=True, knobs={}, status=KEPT, ratio=ratio))
    state.kept = dict(KEPT_KNOBS)
    return state


def test_a_stop_before_the_confirmation_estimates_from_the_kept_trials_ratios() -> None:
    state = _state()
    # The last trial's runs: the reference ran the kept knobs before the last one, not the baseline.
    state.interleaving = Interleaving([_run({"zero_grad_set_to_none": True}, 0.05, "reference")],
                                      [_run(KEPT_KNOBS, 0.04, "candidate")])
    report = unconfirmed(state, TuneConfig(), "the search was interrupted (Ctrl-C)", confirming=False)
    assert report["status"] == "unconfirmed" and report["estimate_ratio"] == pytest.approx(0.4)
    assert report["reason"] == ("the search was interrupted (Ctrl-C): the speed-up is an estimate (the kept "
                                "trials' side-by-side ratios multiplied)")
    assert report["baseline_runs"] == [] and len(report["best_runs"]) == 1 and report["span_s"] == 2.0


def test_a_stop_during_the_confirmation_estimates_from_its_whole_rounds() -> None:
    # A B B ran, then the second round's A was stopped: the first round alone is whole.
    state = _state()
    state.interleaving = Interleaving([_run({}, 0.1, CONFIRM_BASELINE)],
                                      [_run(KEPT_KNOBS, 0.04, CONFIRM_BEST), _run(KEPT_KNOBS, 0.06, CONFIRM_BEST)])
    report = unconfirmed(state, TuneConfig(), "the confirmation was interrupted (SIGTERM)", confirming=True)
    assert report["estimate_ratio"] == pytest.approx(0.4, rel=0.02)
    assert "the confirmation's 1+1 runs so far" in report["reason"]
    assert len(report["baseline_runs"]) == len(report["best_runs"]) == 1 and report["span_s"] == 4.0
