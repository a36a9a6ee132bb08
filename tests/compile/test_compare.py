"""Eager vs compiled from two Records: verdict, payoff."""

from __future__ import annotations

import numpy as np
import pytest

from torchdoctor.compile.compare import compare_eager_compiled, payoff_steps
from torchdoctor.observe.summary import summarise
from torchdoctor.record import Record, StepSample


def record(step_s: float, compile_time_s: float | None = None) -> Record:
    rng = np.random.default_rng(int(step_s * 1000))
    r = Record(script="s.py")
    r.steps = [StepSample(index=i, wall_s=float(step_s * (1 + 0.01 * rng.standard_normal()))) for i in range(20)]
    r.summary = summarise(r.steps)
    r.compile = {"compile_time_s": compile_time_s} if compile_time_s else None
    return r


def test_payoff_is_compile_time_over_the_saving_per_step():
    assert payoff_steps(10.0, 0.5, 0.4) == pytest.approx(100.0)
    assert payoff_steps(10.0, 0.4, 0.5) is None


def test_a_clearly_faster_compiled_run_is_judged_faster_with_its_payoff():
    result = compare_eager_compiled(record(0.100), record(0.050, compile_time_s=5.0))
    assert result["verdict"]["verdict"] == "faster"
    assert result["payoff_steps"] == 5.0 / (result["eager_step_s"] - result["compiled_step_s"])
    assert result["operators"] is None  # no traces in these Records
