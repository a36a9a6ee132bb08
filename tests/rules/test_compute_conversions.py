"""TD-COMP-004 no longer exempts copies and dtype conversions: when one is at the top of the
profile it is named, with the tensors converted each step where the accounting has them."""

from __future__ import annotations

import json
from pathlib import Path

from torchdoctor.record import Record
from torchdoctor.rules import diagnose

FIXTURES = Path(__file__).resolve().parent / "fixtures"
CENTRE = {"name": "aten::_to_copy", "dtype": "float32", "shapes": "[[64, 3, 224, 224]]", "share": 0.6,
          "source": "train.py:31 (train)"}


def _hot(operator: str, accounting: dict | None = None) -> Record:
    """TD-COMP-004's firing fixture with its hot operator (aten::sort) renamed `operator`."""
    record = Record.load(FIXTURES / "TD-COMP-004" / "fires.json")
    record.trace = json.loads(json.dumps(record.trace).replace("aten::sort", operator))
    record.accounting = accounting
    return record


def test_a_conversion_at_the_top_of_the_profile_is_a_finding_naming_the_tensors() -> None:
    accounting = {"source": "script", "cost_centres": [CENTRE, {**CENTRE, "name": "aten::addmm"}]}
    (finding,) = diagnose(_hot("aten::copy_", accounting), select=["TD-COMP-004"]).findings
    assert finding.title == ("copies and conversions (aten::copy_) take 67% of the step: "
                             "float32 [[64, 3, 224, 224]] at train.py:31 (train)")
    assert [c["operator"] for c in finding.evidence["converted_tensors"]] == ["aten::_to_copy"]
    assert "once" in finding.fix.text


def test_without_the_accounting_the_conversion_is_named_alone() -> None:
    (finding,) = diagnose(_hot("aten::to"), select=["TD-COMP-004"]).findings
    assert finding.title == "copies and conversions (aten::to) take 67% of the step"
    assert finding.evidence["converted_tensors"] == []


def test_dense_math_at_the_top_stays_expected() -> None:
    assert diagnose(_hot("aten::mm"), select=["TD-COMP-004"]).findings == []


def test_a_pooling_layer_at_the_top_is_the_networks_own_work() -> None:
    assert diagnose(_hot("aten::max_pool2d_with_indices"), select=["TD-COMP-004"]).findings == []
