"""Input caveats lower every finding's confidence, and say why (analyse/caveats.py)."""

from __future__ import annotations

from dataclasses import replace

from tests.findings import finding
from torchdoctor.analyse import qualify_findings, record_caveats
from torchdoctor.record import Record


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
