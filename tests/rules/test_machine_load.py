"""TD-COMP-031: the script's threads beside other processes' load (rules/machine_load.py). The
fixtures (tests/rules/fixtures/TD-COMP-031/) hold the busy and quiet cases; here, what it says."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from torchdoctor.record import Record
from torchdoctor.rules import diagnose

FIXTURES = Path(__file__).resolve().parent / "fixtures"


def _busy() -> Record:
    return Record.load(FIXTURES / "TD-COMP-031" / "fires.json")


def test_it_names_the_thread_count_the_probe_measured_and_says_the_figures_are_disturbed():
    (finding,) = diagnose(_busy(), select=["TD-COMP-031"]).findings
    assert finding.fix.code.startswith("torch.set_num_threads(1)")
    assert finding.evidence["other_processes_cores"] == 1.1 and finding.evidence["upside_basis"] == "measured"
    assert finding.upside == round(1 - 1 / 6.57, 4) and finding.severity == "problem"
    assert "0.021 s-0.634 s (p10-p90): every timing figure of this run is disturbed" in finding.explanation


def test_threads_beyond_the_cores_are_td_comp_009s_on_a_busy_machine_too():
    record = _busy()
    record.env["torch"]["num_threads"] = 4
    assert diagnose(record, select=["TD-COMP-031"]).findings == []


def test_busy_workers_count_with_the_others_and_a_record_without_their_cpu_is_skipped():
    record = _busy()
    record.env["dataloaders"][0]["num_workers"] = 1
    record.system["summary"]["children_cpu_percent_mean"] = 60.0  # one busy worker
    (finding,) = diagnose(record, select=["TD-COMP-031"]).findings
    assert finding.evidence["worker_cpu_cores"] == 0.6 and "+ 1 busy workers" in finding.title
    del record.system["summary"]["children_cpu_percent_mean"]
    result = diagnose(replace(record), select=["TD-COMP-031"])
    assert result.findings == [] and "children_cpu_percent_mean" in result.skipped[0]
