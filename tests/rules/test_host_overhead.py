"""TD-COMP-003 on a CPU claims the per-operator overhead of an unprofiled step: what the profiler adds
at each operator it records is not overhead that compiling removes (issue 15, item 3)."""

from __future__ import annotations

from pathlib import Path

import pytest

from torchdoctor.record import Record
from torchdoctor.rules import diagnose

#: A real Record: `torchdoctor diagnose` of the HF Trainer field script (tests/field/scripts/
#: hf_trainer_gpt2.py, 1,151 operators a step), its trace's per-step detail left out. Profiled, its
#: step took 13.7 ms; timed, 10.0 ms. Compiling the model measured x1.00-x1.02 (docs/field.md).
TRAINER = Path(__file__).resolve().parent / "fixtures" / "TD-COMP-003" / "silent-hf-trainer-profiled.json"


def _launch_bound(record: Record) -> list:
    return diagnose(record, select=["TD-COMP-003"]).findings


def _time_steps(record: Record, seconds: float, last: int | None = None) -> None:
    """Set the wall time of the timed steps (the `last` ones only, when given)."""
    for step in record.steps[-last if last else 0:]:
        step.wall_s = seconds


def test_the_profilers_own_cost_per_operator_is_not_claimed_as_overhead() -> None:
    record = Record.load(TRAINER)
    assert _launch_bound(record) == []  # 4.1 ms counted in the profiled step, 3.7 ms of it the profiler's
    _time_steps(record, record.trace["ranks"][0]["step_us_median"] / 1e6)  # as if profiling cost nothing
    (finding,) = _launch_bound(record)
    assert finding.upside == pytest.approx(0.297, abs=0.001)  # the x1.42 claimed before this correction


def test_the_overhead_left_after_the_profilers_cost_is_claimed_and_shown() -> None:
    record = Record.load(TRAINER)
    _time_steps(record, 0.0120)  # the profiler added 1.7 ms: 2.3 ms of overhead is left, 19% of 12 ms
    (finding,) = _launch_bound(record)
    evidence = finding.evidence
    assert evidence["timed_step_us"] == 12000.0 and evidence["profiler_overhead_us"] == pytest.approx(1732.4)
    assert evidence["per_op_overhead_us"] == pytest.approx(4075.3 - 1732.4, abs=0.1)
    assert finding.upside == pytest.approx((4075.3 - 1732.4) / 12000.0, abs=1e-4)


def test_the_profiled_step_is_set_against_the_timed_steps_nearest_to_it() -> None:
    """A machine's load drifts over a run: early timed steps slowed to 14 ms say nothing of what the
    profiler added two steps after the last of them."""
    record = Record.load(TRAINER)
    _time_steps(record, 0.014)  # every timed step slower than the profiled one: nothing to take off
    (finding,) = _launch_bound(record)
    assert finding.evidence["profiler_overhead_us"] == 0.0
    _time_steps(record, 0.010, last=5)  # 15 of 20 steps still at 14 ms, the 5 nearest the profile at 10
    assert _launch_bound(record) == []


def test_a_trace_without_timed_steps_is_taken_as_it_was_profiled() -> None:
    record = Record.load(TRAINER)
    record.steps = []  # `diagnose --trace`: nothing says what profiling cost
    (finding,) = _launch_bound(record)
    assert finding.evidence["profiler_overhead_us"] == 0.0 and finding.upside == pytest.approx(0.297, abs=0.001)
