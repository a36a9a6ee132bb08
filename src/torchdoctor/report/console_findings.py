"""Terminal rendering of findings: a table ranked by upside, then each fix with its code.

The one renderer of every command's findings: a Record's (diagnose, report), the compile advice and
the `scale` and `comm` sweeps'. A finding is a dict (`torchdoctor.finding.Finding.to_dict()`; keys in
docs/rules.md and docs/report.md): `id`, `layer`,
`severity` ("info" | "warning" | "problem"), `title`, `upside` (fraction 0..1 of step time or memory
it can win back), `evidence` (dict), `explanation`, `fix` ({"text", "code"} or a plain string) and
`knob`. Missing keys render as "-", so an older or partial finding never breaks the report.
"""

from __future__ import annotations

from typing import Any

from rich.console import Console, Group, RenderableType
from rich.panel import Panel
from rich.syntax import Syntax
from rich.table import Table
from rich.text import Text

SEVERITY_STYLE = {"problem": "bold red", "warning": "yellow", "info": "cyan"}
_SEVERITY_ORDER = {"problem": 0, "warning": 1, "info": 2}


def ranked(findings: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Largest upside first; ties by severity (problem first), then id."""
    return sorted(findings, key=lambda f: (-_upside(f), _SEVERITY_ORDER.get(f.get("severity"), 3), str(f.get("id"))))


def _upside(finding: dict[str, Any]) -> float:
    value = finding.get("upside")
    return float(value) if isinstance(value, (int, float)) else 0.0


def fix_parts(finding: dict[str, Any]) -> tuple[str, str]:
    """The fix's (text, code); either may be empty."""
    fix = finding.get("fix")
    if isinstance(fix, dict):
        return str(fix.get("text") or ""), str(fix.get("code") or "")
    return (str(fix), "") if fix else ("", "")


def evidence_text(evidence: Any, limit: int = 4) -> str:
    """The first `limit` evidence items as `key=value`, floats to 3 significant digits."""
    if not isinstance(evidence, dict):
        return "" if evidence is None else str(evidence)
    items = [f"{k}={_value(v)}" for k, v in list(evidence.items())[:limit]]
    return ", ".join(items) + (", ..." if len(evidence) > limit else "")


def _value(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.3g}"
    if isinstance(value, (list, tuple)):
        return ", ".join(_value(v) for v in value)
    return str(value)


def findings_table(findings: list[dict[str, Any]]) -> Table:
    table = Table(title="Findings, largest upside first", title_justify="left")
    for column, justify in (("#", "right"), ("severity", "left"), ("id", "left"), ("finding", "left"),
                            ("upside", "right"), ("evidence", "left")):  # fmt: skip
        table.add_column(column, justify=justify, overflow="fold")
    for rank, finding in enumerate(ranked(findings), 1):
        severity = str(finding.get("severity", "-"))
        upside = finding.get("upside")
        table.add_row(
            str(rank), Text(severity, style=SEVERITY_STYLE.get(severity, "")), Text(str(finding.get("id", "-"))),
            Text(str(finding.get("title", "-"))), f"{100 * upside:.0f}%" if isinstance(upside, (int, float)) else "-",
            Text(evidence_text(finding.get("evidence")), style="dim"),
        )  # fmt: skip
    return table


def fix_panel(rank: int, finding: dict[str, Any]) -> Panel | None:
    """The explanation and the fix of one finding, its code highlighted; None if it has neither."""
    text, code = fix_parts(finding)
    explanation = str(finding.get("explanation") or "")
    if not (text or code or explanation):
        return None
    parts: list[RenderableType] = [Text(explanation)] if explanation else []
    if text:
        parts.append(Text("fix: ", style="bold green") + Text(text))
    if code:
        parts.append(Syntax(code, "python", theme="ansi_dark", background_color="default", word_wrap=True))
    title = Text(f"{rank}. {finding.get('id', '-')}  ") + Text(str(finding.get("title", "")), style="bold")
    return Panel(Group(*parts), title=title, title_align="left", border_style=SEVERITY_STYLE.get(finding.get("severity"), ""))


def findings_renderables(findings: list[dict[str, Any]], max_fixes: int = 5) -> list[RenderableType]:
    """The findings table, then the fixes of the top `max_fixes` findings; a note when there are none."""
    if not findings:
        return [Text("no findings: nothing measured points at a bottleneck torchdoctor knows how to fix", style="green")]
    panels = [fix_panel(rank, f) for rank, f in enumerate(ranked(findings)[:max_fixes], 1)]
    return [findings_table(findings), *[p for p in panels if p is not None]]


def print_findings(findings: list[dict[str, Any]], console: Console, max_fixes: int = 5) -> None:
    """`findings_renderables` on `console`; nothing at all when there are no findings (for commands whose
    own output already says what was measured)."""
    if findings:
        console.print(*findings_renderables(findings, max_fixes))
