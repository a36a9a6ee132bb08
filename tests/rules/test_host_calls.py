"""The rules on what the script's own code called in a profiled step (rules/host_calls.py) and the
calls TD-COMP-013 names outside the model (rules/outside.py), on synthetic probe values."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from torchdoctor.record import Record
from torchdoctor.rules import diagnose

BASE = Path(__file__).resolve().parent / "fixtures" / "TD-COMP-034" / "fires.json"


def _record(calls: list[dict], *, frames: dict | None = None, forwards: float = 1.0, passes: float = 1.0,
            batch: int = 64, other_s: float = 0.0) -> Record:
    """A Record of six 100 ms steps (`other_s` of each outside the phases) whose profiled step of
    100 ms made `calls`."""
    data = json.loads(BASE.read_text())
    for step in data["steps"]:
        step.update(wall_s=0.1, forward_s=0.03, backward_s=0.03, optimizer_s=0.04 - other_s, batch_size=batch)
    data["summary"] = {"num_steps": 6, "step_s": 0.1, "window_s": 0.6, "data_wait_fraction": 0.0,
                       "forward_fraction": 0.3, "backward_fraction": 0.3, "optimizer_fraction": 0.4 - other_s * 10,
                       "other_fraction": other_s * 10}
    data["probes"]["op_costs"]["script_calls"] = {"forwards": forwards, "backward_passes": passes, "calls": calls,
                                                  "frames": frames or {}}
    return Record.from_dict(data)


def _call(callee: str, caller: str, count: float, wall_s: float, in_model: bool = False,
          ops_s: float = 0.0) -> dict:
    return {"callee": callee, "caller": caller, "count": count, "wall_s": wall_s, "in_model": in_model,
            "ops_s": ops_s}


def _only(record: Record, rule_id: str):
    findings = [f for f in diagnose(record, select=[rule_id]).findings if f.id == rule_id]
    return findings[0] if findings else None


def test_scalar_reads_in_a_generator_cost_the_generators_share_at_most_the_time_outside_the_model():
    reads = _call("Tensor.item", "train.py:40 (<genexpr>)", 512, 0.004)
    frames = {"train.py:40 (<genexpr>)": 0.03, "train.py:20 (main)": 0.1}
    finding = _only(_record([reads], frames=frames, other_s=0.04), "TD-COMP-034")
    assert finding.evidence["scalar_reads_per_step"] == 512
    assert finding.upside == 0.3  # the generator's 30 ms of the 100 ms profiled step
    capped = _only(_record([reads], frames=frames, other_s=0.02), "TD-COMP-034")
    assert capped.upside == 0.2  # the timed steps spent 20% outside the model


def test_an_element_loop_costs_its_generator_the_call_that_consumed_it_and_the_tensor_iteration():
    calls = [_call("Tensor.item", "train.py:40 (<genexpr>)", 256, 0.002),
             {**_call("sum", "train.py:30 (main)", 1, 0.02), "drives": "train.py:40 (<genexpr>)"},
             _call("torch._tensor.__iter__", "train.py:30 (main)", 2, 0.01),
             _call("torch.nn.functional.cross_entropy", "train.py:30 (main)", 1, 0.03)]
    frames = {"train.py:40 (<genexpr>)": 0.01, "train.py:30 (main)": 0.1}
    finding = _only(_record(calls, frames=frames, other_s=0.05), "TD-COMP-034")
    assert finding.upside == 0.4  # 10 + 20 + 10 ms of the 100 ms step; the loss is not the loop's
    iteration = {"callee": "torch._tensor.__iter__", "caller": "train.py:30 (main)"}
    assert iteration in finding.evidence["loop_calls"]
    calls[2]["wall_s"] = 0.05  # iterating the tensor is now the longest call outside the model
    record = _record(calls, frames=frames, other_s=0.07)  # 40% outside the model once the loss's 30% is left out
    assert _only(record, "TD-COMP-013").evidence["calls_outside"][0]["callee"] == "torch._tensor.__iter__"
    ids = [f.id for f in diagnose(record).findings]
    assert "TD-COMP-034" in ids and "TD-COMP-013" not in ids  # the loop explains it


def test_scalar_reads_of_every_kind_from_one_function_add_up():
    calls = [_call("Tensor.item", "train.py:40 (<genexpr>)", 20, 0.001),
             _call("Tensor.__float__", "train.py:40 (<genexpr>)", 20, 0.001)]
    assert _only(_record(calls), "TD-COMP-034").evidence["scalar_reads_per_step"] == 40
    assert _only(_record(calls[:1]), "TD-COMP-034") is None


def test_backward_passes_per_forward_tell_a_row_by_row_jacobian_from_gradient_accumulation():
    rows = _call("torch.autograd.grad", "train.py:23 (jacobian)", 16, 0.05)
    finding = _only(_record([rows], passes=17), "TD-COMP-035")
    assert finding.upside == round(0.5 * (1 - 1 / 16), 4)
    assert "is_grads_batched=True" in finding.fix.code
    accumulation = _call("torch._tensor.backward", "train.py:45 (main)", 8, 0.05)
    assert _only(_record([accumulation], forwards=8, passes=8), "TD-COMP-035") is None


def test_a_module_called_a_batch_size_multiple_of_times_inside_the_model_is_called_per_sample():
    looped = _call("nn.Module: Sequential", "model.py:28 (<listcomp>)", 64, 0.04, in_model=True)
    finding = _only(_record([looped], batch=64), "TD-COMP-036")
    assert finding.evidence["module"] == "Sequential" and finding.evidence["calls_per_step"] == 64
    assert _only(_record([looped], batch=48), "TD-COMP-036") is None  # 64 calls: not once per sample of 48
    outside = {**looped, "in_model": False}
    assert _only(_record([outside], batch=64), "TD-COMP-036") is None  # the script's loop calling its model


def test_time_outside_the_model_names_the_longest_call_and_its_fix_follows_from_it():
    calls = [_call("collect", "train.py:21 (main)", 1, 0.045), _call("randint", "train.py:21 (main)", 1, 0.001),
             _call("nn.Module: Sequential", "train.py:21 (main)", 1, 0.02)]
    finding = _only(_record(calls, other_s=0.05), "TD-COMP-013")
    assert "collect() called from train.py:21 (main)" in finding.title
    assert [c["callee"] for c in finding.evidence["calls_outside"]] == ["collect"]
    assert "gc.freeze()" in finding.fix.code
    plain = _only(_record([], other_s=0.05), "TD-COMP-013")
    assert plain.evidence["calls_outside"] == [] and "every N steps" in plain.fix.text


def test_time_outside_the_model_gives_way_to_the_finding_that_names_the_code_it_was_spent_in():
    reads = _call("Tensor.item", "train.py:40 (<genexpr>)", 512, 0.004)
    frames = {"train.py:40 (<genexpr>)": 0.03, "train.py:20 (main)": 0.1}
    ids = [f.id for f in diagnose(_record([reads], frames=frames, other_s=0.05)).findings]
    assert "TD-COMP-034" in ids and "TD-COMP-013" not in ids
    collect = _call("collect", "train.py:21 (main)", 1, 0.045)
    ids = [f.id for f in diagnose(_record([collect, reads], frames=frames, other_s=0.05)).findings]
    assert "TD-COMP-034" in ids and "TD-COMP-013" in ids  # its longest call is no other finding's


def test_gradients_are_the_backwards_not_time_outside_the_model():
    rows = _call("torch.autograd.grad", "train.py:23 (jacobian)", 16, 0.04)
    finding = _only(_record([rows], passes=17, other_s=0.05), "TD-COMP-013")
    assert finding.evidence["calls_outside"] == []


def test_a_tensor_dataset_fetched_per_row_is_info_from_a_twentieth_of_the_step():
    data = json.loads((BASE.parent.parent / "TD-DATA-011" / "fires.json").read_text())
    for step in data["steps"]:
        step["data_wait_s"] = step["data_wait_cpu_s"] = 0.007
    (finding,) = diagnose(Record.from_dict(data), select=["TD-DATA-011"]).findings
    assert finding.severity == "info" and finding.upside == round(0.07 * (1 - 1 / 1024), 4)
    for step in data["steps"]:
        step["data_wait_s"] = step["data_wait_cpu_s"] = 0.004
    assert diagnose(Record.from_dict(data), select=["TD-DATA-011"]).findings == []


def test_the_loss_called_outside_the_model_is_the_steps_own_work_not_time_outside_it():
    loss = _call("torch.nn.functional.cross_entropy", "train.py:30 (main)", 1, 0.03)
    assert _only(_record([loss], other_s=0.03), "TD-COMP-013") is None  # all of it was the loss
    logging = _call("print", "train.py:33 (main)", 1, 0.02)
    finding = _only(_record([loss, logging], other_s=0.05), "TD-COMP-013")
    assert finding.upside == 0.2 and finding.evidence["calls_outside"][0]["callee"] == "print"


def test_torch_operators_called_outside_the_model_are_the_steps_computation_not_time_outside_it():
    distances = _call("torch.functional.cdist", "train.py:30 (main)", 1, 0.032, ops_s=0.03)
    assert _only(_record([distances], other_s=0.032), "TD-COMP-013") is None  # 2 ms of Python left
    collect = _call("collect", "train.py:31 (main)", 1, 0.03)
    finding = _only(_record([distances, collect], other_s=0.062), "TD-COMP-013")
    assert finding.upside == pytest.approx(0.32) and finding.evidence["calls_outside"][0]["callee"] == "collect"
