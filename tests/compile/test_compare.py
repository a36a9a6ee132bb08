"""Eager vs compiled from runs of each: verdict, payoff; and the order the runs are made in."""

from __future__ import annotations

import numpy as np
import pytest

from torchdoctor.compile.compare import compare_eager_compiled, payoff_steps
from torchdoctor.observe.summary import summarise
from torchdoctor.record import Record, StepSample
from torchdoctor.workflow.compile import interleaved


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
    result = compare_eager_compiled([record(0.100)], [record(0.050, compile_time_s=5.0)])
    assert result["verdict"]["verdict"] == "faster" and result["rounds"] == 1
    assert result["payoff_steps"] == 5.0 / (result["eager_step_s"] - result["compiled_step_s"])
    assert result["operators"] is None  # no traces in these Records


def test_runs_that_agree_decide_and_runs_of_one_side_that_disagree_give_no_verdict():
    agreeing = compare_eager_compiled([record(0.100), record(0.101)], [record(0.050, 5.0), record(0.051)])
    assert agreeing["verdict"]["verdict"] == "faster" and agreeing["verdict"]["decided"]
    assert agreeing["eager_step_s"] == pytest.approx(0.1005, rel=0.02) and agreeing["rounds"] == 2
    # the step times shown are the verdict's own statistic: their quotient is its ratio
    ratio = agreeing["compiled_step_s"] / agreeing["eager_step_s"]
    assert ratio == pytest.approx(agreeing["verdict"]["ratio"], rel=1e-12)
    # As two plain runs of the HF Trainer field script measured on a 2-core VM: 5.1 and 8.0 ms a step.
    drifting = compare_eager_compiled([record(0.0051), record(0.0080)], [record(0.0045, 5.0), record(0.0047)])
    assert not drifting["verdict"]["decided"]
    assert drifting["verdict"]["verdict"] == "no clear difference"


def test_with_three_runs_a_side_every_compiled_run_beating_every_eager_run_decides():
    # `compile` on the zoo's compute_tiny_ops: eager runs of 4.02 and 5.35 ms, compiled 0.63 and 0.89 ms.
    eager, compiled = [record(0.00402), record(0.00535)], [record(0.00063, 5.0), record(0.00089)]
    assert compare_eager_compiled(eager, compiled)["verdict"]["verdict"] == "no clear difference"
    result = compare_eager_compiled([*eager, record(0.0047)], [*compiled, record(0.00075)])
    assert result["verdict"]["separated"] and result["verdict"]["verdict"] == "faster"


def test_the_runs_alternate_so_a_drift_weighs_on_both_sides():
    made: list[str] = []

    def run(side: str):
        def measure() -> Record:
            made.append(side)
            return record(0.01)
        return measure

    first = record(0.01)
    mine, theirs = interleaved(first, run("A"), run("B"), rounds=3)
    assert made == ["B", "B", "A", "A", "B"]  # after the first A: B, then B A, then A B
    assert mine[0] is first and len(mine) == 3 and len(theirs) == 3
    assert interleaved(first, run("A"), run("B"), rounds=1)[0] == [first]
