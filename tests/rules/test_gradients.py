"""TD-COMP-041 and TD-COMP-042: gradients the step computes for nothing, over an embedding table a
step barely touches and for parameters no optimizer holds; their upside from what this run measured."""

from __future__ import annotations

from pathlib import Path

import pytest

from torchdoctor.record import Record
from torchdoctor.rules import diagnose
from torchdoctor.rules.gradients import WEIGHT_GRAD_SHARE

FIXTURES = Path(__file__).resolve().parent / "fixtures"


def _finding(record: Record, rule_id: str):
    findings = [f for f in diagnose(record, select=[rule_id]).findings if f.id == rule_id]
    return findings[0] if findings else None


def test_unused_gradients_claim_what_freezing_them_measured() -> None:
    finding = _finding(Record.load(FIXTURES / "TD-COMP-042" / "fires-measured.json"), "TD-COMP-042")
    assert finding.upside == pytest.approx(1 - 1 / 2.62, abs=1e-3)
    assert finding.evidence["upside_basis"] == "measured" and "requires_grad_(False)" in finding.fix.code


def test_without_the_probe_unused_gradients_are_estimated_from_the_backwards_share() -> None:
    record = Record.load(FIXTURES / "TD-COMP-042" / "fires.json")
    finding = _finding(record, "TD-COMP-042")
    (model,) = record.env["models"]
    expected = (record.summary.backward_fraction * model["unused_grad_parameters"]
                / model["num_trainable_parameters"] * WEIGHT_GRAD_SHARE)
    assert finding.evidence["upside_basis"] == "estimated" and finding.upside == pytest.approx(expected, abs=1e-3)


def test_dense_embedding_gradients_claim_the_whole_table_work_beyond_the_rows_used() -> None:
    record = Record.load(FIXTURES / "TD-COMP-041" / "fires.json")
    finding = _finding(record, "TD-COMP-041")
    ev = finding.evidence
    assert ev["module"] == "items" and "sparse=True" in finding.fix.code and "SparseAdam" in finding.fix.code
    expected = ev["whole_table_ops_fraction"] * (1 - ev["rows_with_grad"] / ev["num_embeddings"])
    assert finding.upside == pytest.approx(expected, abs=1e-3)


def test_a_table_whose_gradient_touched_most_rows_keeps_its_dense_gradient() -> None:
    record = Record.load(FIXTURES / "TD-COMP-041" / "fires.json")
    table = record.env["models"][0]["embeddings"][0]
    table["rows_with_grad"] = int(table["num_embeddings"] * 0.6)
    assert _finding(record, "TD-COMP-041") is None
