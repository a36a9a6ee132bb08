"""Lint hints that need a GPU are not shown with the findings of a run whose models stayed on the CPU."""

from __future__ import annotations

from pathlib import Path

from torchdoctor.record import Record
from torchdoctor.rules import diagnose

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "TD-COMP-014" / "fires.json"


def _violation(code: str, topic: str) -> dict:
    return {"code": code, "layer": "compute", "message": code, "path": "train.py", "line": 3, "col": 0,
            "fixable": False, "rule_hint": topic}


def _record(devices: dict) -> Record:
    record = Record.load(FIXTURE)
    record.env["models"] = [{"class": "Net", "parameter_devices": devices}]
    record.lint = {"schema_version": 1, "errors": [], "skipped": [], "violations": [
        _violation("TDL201", "compute.host_sync"), _violation("TDL401", "scale.data_parallel"),
        _violation("TDL206", "compute.eval_grad")]}
    return record


def test_a_cpu_run_keeps_only_the_hints_that_can_apply_to_it():
    ids = [f.id for f in diagnose(_record({"cpu": 4}), select=["TDL"]).findings]
    assert ids == ["TDL206"]


def test_a_gpu_run_keeps_every_hint():
    ids = sorted(f.id for f in diagnose(_record({"cuda": 4}), select=["TDL"]).findings)
    assert ids == ["TDL201", "TDL206", "TDL401"]
