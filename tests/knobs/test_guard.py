"""Knobs hold their value against the script: the calls that would undo them are held off and
recorded with the caller's file and line (in this process, as in an observed child)."""

from __future__ import annotations

import os

import torch

from torchdoctor.knobs import REGISTRY, apply_knobs, guard


def _line_of(text: str) -> int:
    with open(__file__) as f:
        return next(i for i, line in enumerate(f, 1) if text in line and "_line_of" not in line)


def test_threads_hold_against_set_num_threads_and_omp_num_threads_in_os_environ() -> None:
    before, env_before = torch.get_num_threads(), os.environ.get("OMP_NUM_THREADS")
    guard.reset()
    undo = apply_knobs({"threads": 1})
    try:
        torch.set_num_threads(16)  # the script's own line
        os.environ["OMP_NUM_THREADS"] = "16"
        assert torch.get_num_threads() == 1
        assert os.environ.get("OMP_NUM_THREADS") == env_before
        torch.set_num_threads(1)  # agrees with the knob: passes
        records = guard.intercepted_calls()
    finally:
        undo()
    assert torch.get_num_threads() == before
    assert [(r["call"], r["line"]) for r in records] == [
        ("torch.set_num_threads(16)", _line_of("torch.set_num_threads(16)  # the script's own line")),
        ("os.environ['OMP_NUM_THREADS'] = '16'", _line_of('os.environ["OMP_NUM_THREADS"] = "16"'))]
    assert records[0]["file"] == os.path.realpath(__file__)
    assert records[0]["code"] == "torch.set_num_threads(16)  # the script's own line"


def test_anomaly_detection_switched_on_by_the_script_is_held_off_and_recorded() -> None:
    guard.reset()
    undo = apply_knobs({"no_anomaly_detection": True})
    try:
        torch.autograd.set_detect_anomaly(True)
        assert not torch.is_anomaly_enabled()
        records = guard.intercepted_calls()
    finally:
        undo()
    assert records[0]["knob"] == "no_anomaly_detection" and records[0]["line"] == _line_of(
        "        torch.autograd.set_detect_anomaly(True)")
    assert REGISTRY["no_anomaly_detection"].site_edit(True, records[0]).action == "delete"


def test_a_constructor_whose_arguments_a_knob_rewrote_is_recorded_with_what_changed() -> None:
    guard.reset()
    undo = apply_knobs({"num_workers": 2})
    try:
        loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.zeros(4)), num_workers=0)
        records = guard.intercepted_calls()
    finally:
        undo()
    assert loader.num_workers == 2
    (record,) = records
    assert record["action"] == "rewritten" and record["callee"] == "DataLoader"
    assert record["given"] == ["num_workers"] and record["changed"] == {"num_workers": [0, 2]}
    edit = REGISTRY["num_workers"].site_edit(2, record)
    assert edit.action == "kwargs" and edit.kwargs == {"num_workers": 2}


def test_tf32_holds_against_highest_precision() -> None:
    precision = torch.get_float32_matmul_precision()
    guard.reset()
    undo = REGISTRY["tf32"].apply(True)
    try:
        torch.set_float32_matmul_precision("highest")
        torch.backends.cudnn.allow_tf32 = False
        assert torch.get_float32_matmul_precision() == "high" and torch.backends.cudnn.allow_tf32
        calls = [r["call"] for r in guard.intercepted_calls()]
    finally:
        undo()
    assert torch.get_float32_matmul_precision() == precision
    assert calls == ["torch.set_float32_matmul_precision('highest')", "torch.backends.cudnn.allow_tf32 = False"]
