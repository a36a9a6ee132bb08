"""Findings over a whole run: the trends of a run's `whole_run` section (from a synthetic stream of
the lean observation, broken down as `torchdoctor watch` does) become findings with their figures,
an upside in run time and a fix, ranked with every other finding; a Record without the section
skips them with a note."""

from __future__ import annotations

import pytest

from torchdoctor.record import Record
from torchdoctor.rules import diagnose
from tests.goodput.test_breakdown import Stream

WHOLE_RUN_RULES = ["TD-COMP-027", "TD-COMP-028", "TD-COMP-029", "TD-COMP-030", "TD-COMP-032", "TD-COMP-033",
                   "TD-DATA-010", "TD-MEM-006"]


def _record(tmp_path, stream: Stream) -> Record:
    stream.end()
    record = Record(script="train.py", kind="script", step_detection="optimizer")
    record.whole_run = stream.write(tmp_path / "w.jsonl").to_dict()
    return Record.load(record.save(tmp_path / "record.json"))  # through the JSON, as a stored Record


def _checkpoints_and_a_leak() -> Stream:
    durations = [0.101 if (i + 1) % 50 == 0 else 0.001 for i in range(600)]
    stream = Stream(durations)
    for i, d in enumerate(durations):
        stream.sample(i + 1, 1 if d > 0.01 else 0, times=2 if d > 0.01 else 1)
    stream.lines += [{"mem": [step, step * 1000, 2**30 + step * 2**20, None]} for step in range(20, 600, 20)]
    return stream


def test_periodic_checkpoints_become_a_finding_with_their_period_and_the_run_time_at_stake(tmp_path):
    record = _record(tmp_path, _checkpoints_and_a_leak())
    wall = record.whole_run["wall_s"]
    (finding,) = diagnose(record, select=["TD-COMP-030"]).findings
    assert finding.evidence["period_steps"] == 50 and finding.evidence["times"] == 12
    assert finding.evidence["saved_s"] == pytest.approx(0.6, rel=1e-3)  # half the 12 saves of 0.1 s
    assert finding.upside == pytest.approx(0.6 / wall, abs=1e-4)
    assert "save_checkpoint (train.py:212)" in finding.evidence["cause"]
    assert "step % 100 == 0" in finding.fix.code and "async_save" in finding.fix.code
    assert finding.severity == "problem"  # the saves take 1.2 s of a 4.4 s run: 20% or more


def test_memory_growing_with_the_step_count_is_a_memory_finding(tmp_path):
    record = _record(tmp_path, _checkpoints_and_a_leak())
    (finding,) = diagnose(record, select=["TD-MEM-006"]).findings
    assert finding.layer == "memory" and finding.title == "memory grows by 1.00 MiB a step"
    assert finding.evidence["growth_bytes_per_step"] == pytest.approx(2**20)
    grown = finding.evidence["last_bytes"] - finding.evidence["first_bytes"]
    assert finding.upside == pytest.approx(grown / finding.evidence["last_bytes"], abs=1e-4)
    assert ".item()" in finding.fix.code


def test_whole_run_findings_are_ranked_with_the_others_by_upside(tmp_path):
    findings = diagnose(_record(tmp_path, _checkpoints_and_a_leak())).findings
    ids = [f.id for f in findings]
    assert {"TD-COMP-030", "TD-MEM-006"} <= set(ids)
    assert [f.upside for f in findings] == sorted((f.upside for f in findings), reverse=True)


def test_a_steady_run_raises_no_whole_run_finding(tmp_path):
    stream = Stream([0.001] * 600)
    assert diagnose(_record(tmp_path, stream), select=WHOLE_RUN_RULES).findings == []


def test_a_record_without_a_whole_run_skips_the_rules_with_a_note():
    result = diagnose(Record(), select=WHOLE_RUN_RULES)
    assert result.findings == []
    assert sorted(note.split(":")[0] for note in result.skipped) == WHOLE_RUN_RULES
    assert all("no whole_run section" in note for note in result.skipped), result.skipped
