"""TD-COMP-047: a broadcast that builds a tensor many times larger than its inputs, found from the
operator groups' recorded input shapes, with the share of the step that works on it."""

from __future__ import annotations

import pytest

from torchdoctor.record import Record
from torchdoctor.rules import diagnose


def _group(name: str, shapes: str, self_s: float) -> dict:
    return {"name": name, "dtype": "fp32", "shapes": shapes, "count": 1.0, "self_s": self_s, "flops": 0.0,
            "bytes": 0.0, "source": "train.py:30 (main)", "alone_s": None}


def _finding(ops: list[dict], step_s: float = 0.02):
    costs = {"complete": True, "reason": None, "steps": 2, "step_s": step_s, "ops": ops,
             "self_s_by_kind": {"memory": sum(o["self_s"] for o in ops)}, "flops_by_dtype": {}, "peaks": {}}
    found = diagnose(Record(probes={"op_costs": costs})).findings
    return next((f for f in found if f.id == "TD-COMP-047"), None)


def test_a_pairwise_difference_by_broadcasting_and_the_work_on_it_are_found():
    ops = [_group("aten::sub", "[128, 1, 128]x[1, 256, 128]", 0.001),
           _group("aten::pow", "[128, 256, 128]", 0.004), _group("aten::sum", "[128, 256, 128]", 0.004),
           _group("aten::addmm", "[128]x[128, 64]x[64, 128]", 0.002)]
    finding = _finding(ops)
    assert finding is not None and finding.evidence["broadcast_shape"] == [128, 256, 128]
    assert finding.evidence["blow_up"] == 128 and finding.evidence["operators_on_it"] == ["aten::sub", "aten::pow", "aten::sum"]
    assert finding.upside == pytest.approx(0.45 * (1 - 1 / 128), abs=1e-3)
    assert "torch.cdist" in finding.fix.code


def test_a_bias_add_and_a_small_outer_product_are_not_a_blow_up():
    assert _finding([_group("aten::add", "[64, 512, 768]x[768]", 0.01)]) is None  # the output is the input's size
    assert _finding([_group("aten::mul", "[512, 1]x[1, 512]", 0.01)]) is None  # 262,144 elements: too few to matter
