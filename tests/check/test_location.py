"""Where B's extra time or memory went: phases, grown trace rows, findings and memory categories."""

from __future__ import annotations

import pytest

from torchdoctor.check.figures import observation_figures
from torchdoctor.check.location import findings_changes, grown_rows, memory_changes, operator_coverage, phase_changes
from tests.check.values import record
from tests.findings import finding


def test_phase_changes_mark_the_phases_behind_the_growth() -> None:
    a = [observation_figures(record([0.010] * 3, forward=0.004))] * 3
    b = [observation_figures(record([0.015] * 3, forward=0.009))] * 3
    rows = phase_changes(a, b)
    assert rows[0]["phase"] == "forward" and rows[0]["grew"] and rows[0]["share"] == pytest.approx(1.0)
    assert not any(r["grew"] for r in rows[1:])


def test_grown_rows_merge_profiler_steps_and_drop_small_changes() -> None:
    def row(name: str, a: float, b: float, status: str) -> dict:
        return {"name": name, "us_per_step_a": a, "us_per_step_b": b, "count_per_step_a": 1.0,
                "count_per_step_b": 1.0, "delta_us_per_step": b - a, "status": status}

    rows = [row("aten::mm", 100, 400, "slower"), row("aten::add", 50, 52, "slower"),
            row("aten::cumsum", 0, 90, "added"), row("aten::relu", 80, 10, "faster"),
            row("ProfilerStep#2", 10, 500, "slower"),
            row("ProfilerStep#3", 10, 500, "slower")]
    grown = grown_rows(rows, min_delta_us=20)
    assert [r["name"] for r in grown] == ["ProfilerStep (Python between operators)", "aten::mm", "aten::cumsum"]
    assert grown[0]["delta_us_per_step"] == pytest.approx(980)
    assert operator_coverage(rows[:4], step_delta_s=0.010) is not None  # +0.39 ms of +10 ms: elsewhere
    assert operator_coverage(rows[:4], step_delta_s=0.0004) is None


def test_findings_and_memory_changes() -> None:
    a = [finding("TD-DATA-002", title="data"), finding("TD-COMP-003", severity="info", title="tiny ops")]
    b = [finding("TD-DATA-002", title="data"), finding("TD-MEM-001", title="memory")]
    appeared, vanished = findings_changes(a, b)
    assert appeared == [{"id": "TD-MEM-001", "severity": "warning", "title": "memory"}]
    assert [f["id"] for f in vanished] == ["TD-COMP-003"]
    rows = memory_changes([{"memory_categories": {"activations": 10, "parameters": 5}}],
                          [{"memory_categories": {"activations": 30, "parameters": 5}}])
    assert rows == [{"category": "activations", "a_bytes": 10, "b_bytes": 30, "delta_bytes": 20}]
