"""TD-COMP-025: a large cost below its speed of light that no other finding explains is a finding,
with its operators, dtypes, shapes and the script's line; another finding that explains the same
slice replaces it, and a busy machine silences it."""

from __future__ import annotations

from torchdoctor.accounting import account_record
from torchdoctor.record import Record, StepSample
from torchdoctor.finding import Finding, Fix
from torchdoctor.rules import diagnose
from torchdoctor.rules.engine import _explained_elsewhere

PEAK = 50e9


def _record(ops: list[dict], by_kind: dict[str, float], **system: float) -> Record:
    steps = [StepSample(index=i, wall_s=0.1, data_wait_s=0.0, forward_s=0.04, backward_s=0.05, optimizer_s=0.01)
             for i in range(6)]
    costs = {"complete": True, "reason": None, "steps": 2, "step_s": 0.1, "ops_self_s": sum(by_kind.values()),
             "ops_count": 10, "small_ops_count": 0, "self_s_by_kind": by_kind, "flops": sum(o["flops"] for o in ops),
             "flops_by_dtype": {"fp32": sum(o["flops"] for o in ops)}, "ops": ops,
             "peaks": {"device": "cpu", "threads": 2, "flops_per_s": {"fp32": PEAK}, "bytes_per_s": 10e9,
                       "cached": [], "not_measured": {}, "load_average": 0.5, "cores": 2}}
    record = Record(script="train.py", steps=steps, probes={"op_costs": costs},
                    system={"summary": system} if system else {})
    record.accounting = account_record(record).to_dict()
    return record


def _mm(self_s: float, fraction: float) -> dict:
    return {"name": "aten::mm", "dtype": "fp32", "shapes": "[64, 3]x[3, 64]", "count": 1, "self_s": self_s,
            "flops": self_s * PEAK * fraction, "bytes": 0, "source": "train.py:12 (forward)"}


def _ids(record: Record) -> list[str]:
    return [f.id for f in diagnose(record).findings]


def test_matrix_products_far_below_the_peak_are_a_finding_naming_the_operator_and_its_line():
    finding = next(f for f in diagnose(_record([_mm(0.08, 0.05)], {"compute": 0.08})).findings
                   if f.id == "TD-COMP-025")
    assert finding.evidence["slice"] == "compute_below_peak"
    assert finding.evidence["operators"][0]["source"] == "train.py:12 (forward)"
    assert finding.evidence["operators"][0]["shapes"] == "[64, 3]x[3, 64]"
    assert finding.upside > 0.5 and finding.severity == "problem"
    assert "train.py:12" in finding.explanation


def test_matrix_products_near_the_peak_are_healthy_and_no_finding():
    assert "TD-COMP-025" not in _ids(_record([_mm(0.08, 0.8)], {"compute": 0.08}))


def test_matrix_products_far_below_the_peak_but_as_fast_as_alone_on_their_shapes_are_no_finding():
    slow_alone = {**_mm(0.06, 0.05), "alone_s": 0.05}  # a narrow product: the peak is out of its reach
    assert "TD-COMP-025" not in _ids(_record([slow_alone], {"compute": 0.06}))
    slower_in_step = {**_mm(0.06, 0.05), "alone_s": 0.01}  # six times its time alone: the step's
    assert "TD-COMP-025" in _ids(_record([slower_in_step], {"compute": 0.06}))


def test_a_busy_machine_gives_no_finding_and_the_accounting_says_why():
    record = _record([_mm(0.08, 0.05)], {"compute": 0.08}, machine_cpu_percent_mean=100.0,
                     process_cpu_percent_mean=20.0)
    assert "TD-COMP-025" not in _ids(record)
    assert record.accounting["busy"] and "the machine was busy" in record.accounting["notes"][-1]


def _finding(rule_id: str, evidence: dict) -> Finding:
    return Finding(rule_id, "compute", "warning", rule_id, 0.3, evidence, "", Fix(""))


def test_a_specific_finding_on_the_same_slice_replaces_the_generic_one():
    generic = _finding("TD-COMP-025", {"slice": "compute_below_peak"})
    threads = _finding("TD-COMP-009", {})  # too many threads explains compute below the peak
    data = _finding("TD-DATA-002", {})  # the data wait explains another slice
    assert _explained_elsewhere([generic, threads]) == [threads]
    assert _explained_elsewhere([generic, data]) == [generic, data]
