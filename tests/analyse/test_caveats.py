"""Input caveats lower every finding's confidence, and say why (analyse/caveats.py)."""

from __future__ import annotations

from torchdoctor.analyse import qualify_findings, record_caveats
from torchdoctor.record import Record


def test_findings_of_an_input_with_caveats_are_low_confidence_and_carry_them():
    findings = [{"id": "TD-COMP-001", "upside": 0.8}, {"id": "TD-DATA-001"}]
    qualified = qualify_findings(findings, ["t.json: truncated trace"])
    assert [f["confidence"] for f in qualified] == ["low", "low"]
    assert qualified[0]["caveats"] == ["t.json: truncated trace"] and qualified[0]["upside"] == 0.8
    assert "confidence" not in findings[0]  # the input is not changed


def test_findings_of_a_clean_input_are_normal_confidence():
    assert qualify_findings([{"id": "X"}], []) == [{"id": "X", "confidence": "normal", "caveats": []}]


def test_a_records_caveats_come_from_its_trace_analysis_and_a_malformed_section_has_none():
    assert record_caveats(Record(trace={"caveats": ["cut"], "warnings": ["cut", "no step"]})) == ["cut"]
    assert record_caveats(Record()) == [] and record_caveats(Record(trace={"caveats": "cut"})) == []
