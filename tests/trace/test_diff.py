"""Trace diff (trace/diff.py)."""

from __future__ import annotations

from pathlib import Path

from torchdoctor.trace import diff_traces


def test_a_trace_compared_with_itself_changes_nothing(cpu_trace: Path) -> None:
    diff = diff_traces(cpu_trace, cpu_trace).to_dict()
    assert diff["ops"] and {row["status"] for row in diff["ops"]} == {"same"}


def test_a_different_model_shows_added_and_removed_kernels(gpu_traces: Path) -> None:
    diff = diff_traces(gpu_traces / "h100-bert-small-inference.json.gz", gpu_traces / "h100-qwen-0.5b-inference.json.gz").to_dict()
    statuses = {row["status"] for row in diff["kernels"]}
    assert {"added", "removed"} <= statuses
    first = diff["ops"][0]
    assert abs(first["delta_us_per_step"]) == max(abs(r["delta_us_per_step"]) for r in diff["ops"])


def test_swapping_an_activation_shows_one_operator_removed_and_one_added(cpu_trace: Path, cpu_trace_tanh: Path) -> None:
    rows = {row["name"]: row for row in diff_traces(cpu_trace, cpu_trace_tanh).to_dict()["ops"]}
    assert rows["aten::relu"]["status"] == "removed" and rows["aten::relu"]["count_per_step_a"] == 1
    assert rows["aten::tanh"]["status"] == "added" and rows["aten::tanh"]["count_per_step_b"] == 1
    assert rows["aten::addmm"]["count_per_step_a"] == rows["aten::addmm"]["count_per_step_b"] == 2
