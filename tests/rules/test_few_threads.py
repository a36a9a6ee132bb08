"""TD-COMP-043: fewer intra-op threads than the free cores, claimed only as the threads probe
measured one a core; never beside a busy machine (TD-COMP-031's) nor for a launcher's count."""

from __future__ import annotations

from pathlib import Path

import pytest

from torchdoctor.record import Record
from torchdoctor.rules import diagnose

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "TD-COMP-043"


def _ids(record: Record) -> list[str]:
    return [f.id for f in diagnose(record, select=["TD-COMP-043"]).findings]


def test_one_thread_on_two_cores_claims_what_two_threads_measured() -> None:
    (finding,) = diagnose(Record.load(FIXTURES / "fires.json"), select=["TD-COMP-043"]).findings
    assert finding.upside == pytest.approx(1 - 1 / 1.75, abs=1e-3)
    assert finding.evidence["threads_in_fix"] == 2 and "torch.set_num_threads(2)" in finding.fix.code


def test_unmeasured_it_is_said_without_an_upside() -> None:
    (finding,) = diagnose(Record.load(FIXTURES / "fires-unprobed.json"), select=["TD-COMP-043"]).findings
    assert finding.severity == "info" and finding.upside == 0.0
    assert finding.evidence["upside_basis"] == "not measured"


def test_beside_other_processes_keeping_the_cores_busy_more_threads_are_said_not_claimed() -> None:
    record = Record.load(FIXTURES / "fires.json")
    record.system["summary"]["machine_cpu_percent_mean"] = 90.0  # others keep 1.1 of the 2 cores busy
    (finding,) = diagnose(record, select=["TD-COMP-043"]).findings
    assert finding.severity == "info" and finding.upside == 0.0  # the probe's figure is not taken there
    assert finding.evidence["upside_basis"] == "not measured" and "quiet machine" in finding.fix.text


def test_a_count_the_launcher_set_is_not_a_finding() -> None:
    record = Record.load(FIXTURES / "fires.json")
    record.env["env_vars"] = {"OMP_NUM_THREADS": "1"}
    assert _ids(record) == []
