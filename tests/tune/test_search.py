"""The search's order of trials, with the subprocess replaced by fabricated step times (the real
trials are covered by test_tune_cli.py and test_robustness.py): which knob is tried when."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from torchdoctor.record import Record, StepSample, Summary
from torchdoctor.store import RunStore
from torchdoctor.tune import search
from torchdoctor.tune.config import TuneConfig
from torchdoctor.tune.trial import Trial

KNOBS = ["no_anomaly_detection", "channels_last", "zero_grad_set_to_none", "compile"]


def _fake_trial(script: Path, args: Any, knobs: dict[str, Any], config: TuneConfig, *, index: int,
                knob: str | None, out_dir: Path, diagnose: bool = False) -> Trial:
    """Only zero_grad_set_to_none makes a step faster (x0.5); every other knob changes nothing."""
    step_s = 0.1 * (0.5 if "zero_grad_set_to_none" in knobs else 1.0)
    steps = [StepSample(index=i, wall_s=step_s * (1 + 0.01 * math.sin(i + index)), backward_s=0.01, loss=1.0)
             for i in range(30)]
    record = Record(steps=steps, summary=Summary(num_steps=30, step_s=step_s),
                    env={"torch": {"anomaly_detection": True}, "cpu": {"logical_cores": 2},
                         "optimizers": [{"class": "SGD", "module": "torch.optim.sgd"}],
                         "models": [{"class": "Net", "module_types": {"Conv2d": 1}}]})
    return Trial(index=index, knob=knob, value=knobs.get(knob) if knob else None, knobs=dict(knobs),
                 record=record, step_s=step_s)


@pytest.fixture
def tuner(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> search.Tuner:
    monkeypatch.setattr(search, "run_trial", _fake_trial)
    config = TuneConfig(only=KNOBS, repeat_baseline=False, patience=10)
    return search.Tuner(tmp_path / "train.py", [], config, store=RunStore(tmp_path / "runs.db"), work_dir=tmp_path)


def test_the_second_pass_retries_only_knobs_tried_before_the_last_kept_one(tuner: search.Tuner) -> None:
    result = tuner.run()
    assert result.kept == {"zero_grad_set_to_none": True}
    tried = [t["knob"] for t in result.trials]
    # Pass 1: all four; compile was already tried on top of zero_grad_set_to_none, so pass 2
    # retries only the two knobs rejected before it was kept.
    assert tried == [None, *KNOBS, "no_anomaly_detection", "channels_last"]
    assert [t["knobs"] for t in result.trials[-2:]] == [
        {"zero_grad_set_to_none": True, "no_anomaly_detection": True},
        {"zero_grad_set_to_none": True, "channels_last": True}]
