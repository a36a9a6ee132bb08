"""Lint reports as text, JSON or SARIF 2.1.0 (for GitHub code scanning and IDEs)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from torchdoctor import __version__
from torchdoctor.lint.registry import all_checks
from torchdoctor.lint.result import LintResult

FORMATS = ("text", "json", "sarif")
SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
DOCS_URI = "https://github.com/torchdoctor/torchdoctor/blob/main/docs/lint.md"


def render(report: LintResult, fmt: str) -> str:
    """The report in `fmt` (one of :data:`FORMATS`)."""
    if fmt == "json":
        return orjson.dumps(report.to_dict(), option=orjson.OPT_INDENT_2).decode()
    if fmt == "sarif":
        return orjson.dumps(to_sarif(report), option=orjson.OPT_INDENT_2).decode()
    return render_text(report)


def render_text(report: LintResult) -> str:
    """`path:line:col CODE message` per violation, then `path:line:col error: reason` per
    unreadable file."""
    lines = [v.to_text() for v in report.violations]
    for error in report.errors:
        where = f"{error.path}:{error.line}:{error.col}" if error.line else error.path
        lines.append(f"{where} error: {error.reason}")
    return "\n".join(lines)


def to_sarif(report: LintResult) -> dict[str, Any]:
    """A SARIF 2.1.0 log with one run: every check as a rule, every violation as a result, and
    unreadable files as tool execution notifications."""
    checks = all_checks()
    index = {check.code: i for i, check in enumerate(checks)}
    rules = [
        {
            "id": c.code,
            "name": c.topic,
            "shortDescription": {"text": c.message.replace("{subject}", "...")},
            "helpUri": f"{DOCS_URI}#{c.code.lower()}",
            "properties": {"layer": c.layer, "rule_hint": c.rule_hint},
        }
        for c in checks
    ]
    results = [
        {
            "ruleId": v.code,
            "ruleIndex": index[v.code],
            "level": "warning",
            "message": {"text": v.message},
            "locations": [_location(v.path, v.line, v.col)],
            "properties": {"fixable": v.fixable},
        }
        for v in report.violations
    ]
    notes = [
        {"level": "error", "message": {"text": e.reason}, "locations": [_location(e.path, e.line, e.col)]}
        for e in report.errors
    ]
    driver = {"name": "torchdoctor-lint", "version": __version__, "informationUri": DOCS_URI}
    driver["rules"] = rules
    invocation = {"executionSuccessful": True, "toolExecutionNotifications": notes}
    run = {"tool": {"driver": driver}, "results": results, "invocations": [invocation]}
    return {"$schema": SARIF_SCHEMA, "version": "2.1.0", "runs": [run]}


def _location(path: str, line: int | None, col: int | None) -> dict[str, Any]:
    file = Path(path)
    uri = file.as_uri() if file.is_absolute() else file.as_posix()
    physical: dict[str, Any] = {"artifactLocation": {"uri": uri}}
    if line:
        physical["region"] = {"startLine": line, "startColumn": col or 1}
    return {"physicalLocation": physical}
