"""TD-COMP-009 counts DataLoader workers only when they are busy, with the cores they measurably use."""

from __future__ import annotations

from pathlib import Path

from torchdoctor.record import Record
from torchdoctor.rules import diagnose

IDLE = Path(__file__).resolve().parent / "fixtures" / "TD-COMP-009" / "silent_idle_workers.json"


def _with_worker_cpu(percent: float | None) -> Record:
    record = Record.load(IDLE)  # 2 intra-op threads + 2 workers on 2 cores
    if percent is None:
        del record.system["summary"]["children_cpu_percent_mean"]
    else:
        record.system["summary"]["children_cpu_percent_mean"] = percent
    return record


def test_busy_workers_on_oversubscribed_cores_fire_with_a_smaller_upside_than_the_old_guess():
    result = diagnose(_with_worker_cpu(180.0), select=["TD-COMP-009"])
    (finding,) = result.findings
    assert finding.evidence["worker_cpu_cores"] == 1.8
    assert "busy workers" in finding.title
    assert "torch.set_num_threads(1)" in finding.fix.code
    compute = 0.8  # forward + backward + optimizer fractions of the fixture
    assert 0.05 < finding.upside < compute * 0.5  # the old guess: compute x (1 - cores / (threads + workers))


def test_idle_workers_or_an_unmeasured_worker_cpu_leave_the_threads_alone():
    assert diagnose(_with_worker_cpu(24.0), select=["TD-COMP-009"]).findings == []
    assert diagnose(_with_worker_cpu(None), select=["TD-COMP-009"]).findings == []
