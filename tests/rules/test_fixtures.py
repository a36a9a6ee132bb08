"""Every rule fires on the evidence it names (fixtures/<id>/fires.json) and stays silent without it
(fixtures/<id>/silent.json). Adding a rule means adding its fixture folder; these tests find it.
Further real records a rule must fire on are named `fires-*.json`; every other name, silent."""

from __future__ import annotations

from pathlib import Path

import pytest

from torchdoctor.record import Record
from torchdoctor.rules import diagnose

FIXTURES = Path(__file__).resolve().parent / "fixtures"
CASES = sorted((p.parent.name, p.stem) for p in FIXTURES.glob("*/*.json"))


@pytest.mark.parametrize(("rule_id", "case"), CASES, ids=[f"{r}-{c}" for r, c in CASES])
def test_rule_fires_on_its_evidence_and_is_silent_without_it(rule_id: str, case: str) -> None:
    record = Record.load(FIXTURES / rule_id / f"{case}.json")
    result = diagnose(record, select=[rule_id])
    ids = [f.id for f in result.findings if not f.id.startswith("TDL")]
    if case == "fires" or case.startswith("fires-"):
        assert ids == [rule_id], result.skipped
        finding = result.findings[0]
        assert 0.0 <= finding.upside <= 1.0 and finding.evidence and finding.fix.text
    else:
        assert ids == [], [f.title for f in result.findings]


def test_a_fired_rule_carries_the_lint_locations_that_back_it() -> None:
    record = Record.load(FIXTURES / "TD-COMP-014" / "fires.json")
    (finding,) = diagnose(record, select=["TD-COMP-014"]).findings
    assert finding.evidence["lint"] == ["train.py:7:4 TDL208"]
