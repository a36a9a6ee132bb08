"""Text, JSON and SARIF renderings of one report."""

from __future__ import annotations

from pathlib import Path

import orjson

from torchdoctor.lint import lint_paths
from torchdoctor.lint.output import render


def report_with_one_violation_and_one_error(tmp_path: Path):
    (tmp_path / "a.py").write_text("import torch\nm = torch.nn.DataParallel(net)\n")
    (tmp_path / "b.py").write_text("def f(:\n")
    return lint_paths([tmp_path])


def test_text_is_one_line_per_violation_then_errors(tmp_path: Path) -> None:
    lines = render(report_with_one_violation_and_one_error(tmp_path), "text").splitlines()
    assert lines[0].startswith(f"{tmp_path / 'a.py'}:2:5 TDL401 nn.DataParallel")
    assert lines[1].startswith(f"{tmp_path / 'b.py'}:1:") and " error: syntax error" in lines[1]


def test_json_is_the_report_dict(tmp_path: Path) -> None:
    report = report_with_one_violation_and_one_error(tmp_path)
    assert orjson.loads(render(report, "json")) == report.to_dict()


def test_sarif_has_rules_results_and_notifications(tmp_path: Path) -> None:
    sarif = orjson.loads(render(report_with_one_violation_and_one_error(tmp_path), "sarif"))
    assert sarif["version"] == "2.1.0" and sarif["$schema"].endswith("sarif-2.1.0.json")
    (run,) = sarif["runs"]
    rules = run["tool"]["driver"]["rules"]
    (result,) = run["results"]
    assert rules[result["ruleIndex"]]["id"] == result["ruleId"] == "TDL401"
    location = result["locations"][0]["physicalLocation"]
    assert location["artifactLocation"]["uri"] == (tmp_path / "a.py").as_uri()
    assert location["region"] == {"startLine": 2, "startColumn": 5}
    (note,) = run["invocations"][0]["toolExecutionNotifications"]
    assert note["level"] == "error" and "syntax error" in note["message"]["text"]
