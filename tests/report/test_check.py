"""`torchdoctor check`'s renderers on hand-made results: JSON keys, Markdown, JUnit XML (parsed with
xml.etree), GitHub annotations (escaped), the console."""

from __future__ import annotations

import io
import xml.etree.ElementTree as ET

import orjson
from rich.console import Console

from torchdoctor.check import ERROR, PASS, REGRESSION, UNDECIDED, CheckResult, Location, Metric
from torchdoctor.report.check import render_check, to_annotations, to_json, to_junit, to_markdown

#: The top-level keys of the JSON document, schema_version 1 (docs/check.md).
SCHEMA_KEYS = {"schema_version", "kind", "decision", "exit_code", "reason", "mode", "script", "argv", "a", "b", "dirty",
               "dirty_files", "settings", "gate_metric", "metrics", "rounds", "planned_rounds", "observations", "wall_s",
               "stop_reason", "aa_ratio", "samples_s", "location", "env", "error", "warnings", "baseline", "work_dir"}
METRIC_KEYS = {"name", "label", "unit", "better", "a", "b", "ratio", "change", "ci_low", "ci_high", "confidence",
               "pass_bound",
               "noise_floor", "min_detectable_effect", "verdict", "gate", "threshold", "n_a", "n_b", "note"}


def _result(decision: str, **changes) -> CheckResult:
    step = Metric("step_time", "step time", "s", "lower", a=0.010, b=0.0123, ratio=1.23, ci_low=1.18, ci_high=1.28,
                  confidence=0.9917, noise_floor=0.02, min_detectable_effect=0.04, verdict="worse",
                  gate=REGRESSION if decision == REGRESSION else PASS, threshold=0.05, n_a=5, n_b=5)
    memory = Metric("peak_memory", "peak memory", "bytes", "lower", a=2**20, b=2**20, ratio=1.0, ci_low=1.0,
                    ci_high=1.0, verdict="no clear difference", gate=PASS, threshold=0.10, n_a=10, n_b=5)
    result = CheckResult(decision=decision, reason="step time +23.0% (95% CI +18.0% .. +28.0%) is beyond the allowed "
                         "+5.0%", mode="ref", script="train.py", argv=["--epochs", "1"],
                         a={"name": "A", "label": "main (abc1234)"}, b={"name": "B", "label": "working tree"},
                         metrics=[step, memory], rounds=5, observations=17, wall_s=12.5, stop_reason="settled",
                         gate_metric="step_s", samples_s={"A": [0.01] * 5, "B": [0.0123] * 5})
    for key, value in changes.items():
        setattr(result, key, value)
    return result


def _located() -> Location:
    return Location(
        phases=[{"phase": "forward", "a_s": 0.004, "b_s": 0.0063, "delta_s": 0.0023, "share": 1.0, "grew": True},
                {"phase": "other", "a_s": 0.006, "b_s": 0.006, "delta_s": 0.0, "share": 0.0, "grew": False}],
        ops=[{"name": "aten::mm", "us_per_step_a": 100.0, "us_per_step_b": 2400.0, "delta_us_per_step": 2300.0,
              "count_per_step_a": 1, "count_per_step_b": 2, "status": "slower"}],
        findings_appeared=[{"id": "TD-COMP-004", "severity": "warning", "title": "one operator dominates"}],
        traces={"A": "a.json.gz", "B": "b.json.gz"})


def test_json_keeps_the_documented_keys() -> None:
    data = orjson.loads(to_json(_result(REGRESSION, location=_located(), dirty=True, dirty_files=["train.py"])))
    assert set(data) == SCHEMA_KEYS
    assert data["schema_version"] == 2 and data["kind"] == "torchdoctor.check"
    assert data["decision"] == "regression" and data["exit_code"] == 1 and data["dirty"] is True
    assert set(data["metrics"]) == {"step_time", "peak_memory"}
    assert set(data["metrics"]["step_time"]) == METRIC_KEYS
    assert abs(data["metrics"]["step_time"]["change"] - 0.23) < 1e-12
    assert set(data["location"]) == {"phases", "ops", "kernels", "findings_appeared", "findings_vanished",
                                     "memory_categories", "traces", "notes"}


def test_exit_codes() -> None:
    assert [_result(d).exit_code for d in (PASS, REGRESSION, UNDECIDED, ERROR)] == [0, 1, 2, 2]


def test_markdown_is_a_job_summary() -> None:
    text = to_markdown(_result(REGRESSION, location=_located(), dirty=True, dirty_files=["train.py"]))
    assert text.startswith("## ❌ torchdoctor check: REGRESSION")
    assert "| step time | 10.00 ms | 12.30 ms | +23.0% | +18.0% .. +28.0% | 2.0% | regression (max +5.0%) |" in text
    assert "| **forward** | 4.00 ms | 6.30 ms | +2.30 ms | 100% |" in text
    assert "`aten::mm`" in text and "finding appeared: **TD-COMP-004**" in text
    assert "uncommitted changes (1 file(s))" in text


def test_junit_has_a_failure_per_regressed_gate() -> None:
    root = ET.fromstring(to_junit(_result(REGRESSION, location=_located())))
    assert root.tag == "testsuites" and root.get("failures") == "1" and root.get("errors") == "0"
    cases = root.findall("./testsuite/testcase")
    assert [c.get("name") for c in cases] == ["step time", "peak memory"]
    failure = cases[0].find("failure")
    assert failure is not None and failure.get("type") == "regression" and "+23.0%" in failure.get("message")
    assert cases[1].find("failure") is None and cases[1].find("error") is None
    properties = {p.get("name"): p.get("value") for p in root.iter("property")}
    assert properties["decision"] == "regression" and properties["a"] == "main (abc1234)"


def test_junit_reports_an_error_and_an_undecided_check_as_errors() -> None:
    error = _result(ERROR, metrics=[], reason="REF 'nope' is not a commit",
                    error={"kind": "bad_ref", "side": None, "message": "REF 'nope' is not a commit", "detail": None})
    root = ET.fromstring(to_junit(error))
    assert root.get("errors") == "1" and root.find("./testsuite/testcase").get("name") == "check"
    undecided = _result(UNDECIDED, reason="cannot decide")
    undecided.metrics[0].gate = UNDECIDED
    root = ET.fromstring(to_junit(undecided))
    assert root.get("errors") == "1" and root.get("failures") == "0"


def test_annotations_are_escaped_workflow_commands() -> None:
    lines = to_annotations(_result(REGRESSION, location=_located(), warnings=["a, b: c"]))
    assert lines[0].startswith("::error title=torchdoctor check%3A REGRESSION::step time +23.0%25")
    assert lines[1] == "::error title=torchdoctor check%3A where it grew::grew: forward phase, aten::mm"
    assert lines[2] == "::warning title=torchdoctor check::a, b: c"
    assert to_annotations(_result(PASS))[0].startswith("::notice ")
    assert all("\n" not in line for line in lines)


def test_console_shows_the_verdict_table_and_the_location() -> None:
    out = io.StringIO()
    render_check(_result(REGRESSION, location=_located()), Console(file=out, width=200))
    text = out.getvalue()
    assert "REGRESSION: step time +23.0%" in text
    assert "regression (max +5.0%)" in text and "forward grew" in text and "aten::mm" in text
