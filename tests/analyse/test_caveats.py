"""Caveats (a cut trace, a busy machine) lower every finding's confidence, and say why (analyse/caveats.py)."""

from __future__ import annotations

from dataclasses import replace

from tests.findings import finding
from torchdoctor.analyse import qualify_findings, record_caveats
from torchdoctor.record import Record, Summary


def test_findings_of_an_input_with_caveats_are_low_confidence_and_carry_them():
    findings = [finding("TD-COMP-001", upside=0.8), finding("TD-DATA-001")]
    qualified = qualify_findings(findings, ["t.json: truncated trace"])
    assert [f.confidence for f in qualified] == ["low", "low"]
    assert qualified[0].caveats == ("t.json: truncated trace",) and qualified[0].upside == 0.8
    assert findings[0].confidence is None  # the input is not changed
    assert list(qualified[0].to_dict())[-2:] == ["confidence", "caveats"]
    assert qualified[0].to_dict()["caveats"] == ["t.json: truncated trace"]


def test_findings_of_a_clean_input_are_normal_confidence():
    assert qualify_findings([finding("X")], []) == [replace(finding("X"), confidence="normal", caveats=())]


def test_a_records_caveats_come_from_its_trace_analysis_and_a_malformed_section_has_none():
    assert record_caveats(Record(trace={"caveats": ["cut"], "warnings": ["cut", "no step"]})) == ["cut"]
    assert record_caveats(Record()) == [] and record_caveats(Record(trace={"caveats": "cut"})) == []


def loaded_run(machine_percent: float, process_percent: float = 90.0) -> Record:
    """A 2-core run whose steps ranged 21-634 ms, beside a machine at `machine_percent`."""
    return Record(env={"cpu": {"physical_cores": 2, "logical_cores": 2}},
                  system={"summary": {"machine_cpu_percent_mean": machine_percent,
                                      "process_cpu_percent_mean": process_percent}},
                  summary=Summary(num_steps=20, step_s=0.2, step_s_p10=0.021, step_s_p90=0.634))


def test_a_busy_machine_is_a_caveat_naming_the_others_share_and_the_step_times_spread():
    (caveat,) = record_caveats(loaded_run(100.0))
    assert caveat.startswith("other processes used 1.1 of the machine's 2 cores (55%) while the steps were timed")
    assert "the step time ranged 0.021 s-0.634 s (p10-p90)" in caveat and "every timing figure is disturbed" in caveat


def test_a_cut_trace_comes_before_a_busy_machine():
    record = replace(loaded_run(100.0), trace={"caveats": ["cut"], "warnings": ["cut"]})
    assert record_caveats(record)[0] == "cut" and len(record_caveats(record)) == 2


def test_a_quiet_machine_or_one_whose_load_was_not_sampled_gives_no_caveat():
    assert record_caveats(loaded_run(48.0)) == []  # others: 0.06 of 2 cores
    assert record_caveats(loaded_run(60.0)) == []  # others: 0.3, under a quarter of the machine
    assert record_caveats(replace(loaded_run(100.0), system={})) == []
    assert record_caveats(replace(loaded_run(100.0), env={})) == []
