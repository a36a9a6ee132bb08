"""Two Records side by side: the step-time change with a verdict, and what differs."""

from __future__ import annotations

import pytest

from torchdoctor.analyse import compare_records
from torchdoctor.record import Record, StepSample, Summary


def test_comparison_reports_step_change_and_what_differs():
    a = Record(run_id="a", config={"warmup_steps": 5}, env={"torch": {"num_threads": 2}},
               steps=[StepSample(i, 0.100 + 0.001 * (i % 3)) for i in range(20)], summary=Summary(step_s=0.1))
    b = Record(run_id="b", config={"warmup_steps": 5}, env={"torch": {"num_threads": 1}},
               steps=[StepSample(i, 0.050 + 0.001 * (i % 3)) for i in range(20)], summary=Summary(step_s=0.05))
    comparison = compare_records(a, b)
    assert comparison.step_change == pytest.approx(-0.5)
    assert comparison.verdict["verdict"] == "faster"
    assert comparison.env_diff == [("torch.num_threads", 2, 1)]
    assert comparison.config_diff == []
