"""Terminal rendering of findings: a table ranked by upside, its evidence below it, then each fix with its code.

The one renderer of every command's findings: a Record's (diagnose, report), the compile advice and
the `scale` and `comm` sweeps'. A finding is a `torchdoctor.finding.Finding` (fields in docs/rules.md
and docs/report.md); a low `confidence` (the input had caveats) is said next to its title. A loaded
Record's findings have the annotated types but any strings: an unknown severity ranks after the known
ones and renders unstyled. Every string goes through report/safe_text.py (titles and evidence quote
names from traces and scripts), and the table stops at `MAX_ROWS` findings (the JSON keeps all of them).
"""

from __future__ import annotations

from typing import Any

from rich.console import Console, Group, RenderableType
from rich.panel import Panel
from rich.syntax import Syntax
from rich.table import Table
from rich.text import Text

from torchdoctor.finding import Finding
from torchdoctor.report.notes import row_notes
from torchdoctor.report.safe_text import cell, clean, plain

#: Findings listed in the table at most; the rest are counted under it.
MAX_ROWS = 40
LOW_CONFIDENCE = " (low confidence: see the caveats above)"
SEVERITY_STYLE = {"problem": "bold red", "warning": "yellow", "info": "cyan"}
_SEVERITY_ORDER = {"problem": 0, "warning": 1, "info": 2}


def ranked(findings: list[Finding]) -> list[Finding]:
    """Largest upside first; ties by severity (problem first), then id."""
    return sorted(findings, key=lambda f: (-f.upside, _SEVERITY_ORDER.get(f.severity, 3), f.id))


def fix_parts(finding: Finding) -> tuple[str, str]:
    """The fix's (text, code); either may be empty."""
    return finding.fix.text, finding.fix.code


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


def _title(finding: Finding) -> Text:
    title = cell(finding.title)
    if finding.confidence == "low":
        title.append(LOW_CONFIDENCE, style="yellow")
    return title


def findings_table(findings: list[Finding], max_rows: int = MAX_ROWS) -> Table:
    """The ranked findings, a line or a few each; their evidence is `evidence_notes`, below the table."""
    shown = ranked(findings)[:max_rows]
    more = len(findings) - len(shown)
    caption = f"... and {more} more findings with less upside (all are in the JSON)" if more > 0 else None
    table = Table(title="Findings, largest upside first", title_justify="left", caption=caption)
    for column, justify in (("#", "right"), ("severity", "left"), ("id", "left"), ("finding", "left"),
                            ("upside", "right")):  # fmt: skip
        table.add_column(column, justify=justify, overflow="fold", ratio=1 if column == "finding" else None)
    for rank, finding in enumerate(shown, 1):
        severity = clean(finding.severity, one_line=True)
        table.add_row(str(rank), cell(severity, SEVERITY_STYLE.get(severity, "")), cell(finding.id), _title(finding),
                      f"{100 * finding.upside:.0f}%")
    return table


def evidence_notes(findings: list[Finding], max_rows: int = MAX_ROWS) -> Table | None:
    """The evidence of the findings in the table, a paragraph each after its `#`."""
    return row_notes("evidence (by #)", [(str(rank), cell(evidence_text(f.evidence), "dim", limit=400))
                                  for rank, f in enumerate(ranked(findings)[:max_rows], 1)])


def fix_panel(rank: int, finding: Finding) -> Panel | None:
    """The explanation and the fix of one finding, its code highlighted; None if it has neither."""
    text, code = fix_parts(finding)
    explanation = clean(finding.explanation)
    if not (text or code or explanation):
        return None
    parts: list[RenderableType] = [Text(explanation)] if explanation else []
    if text:
        parts.append(Text("fix: ", style="bold green") + plain(text))
    if code:
        parts.append(Syntax(clean(code), "python", theme="ansi_dark", background_color="default", word_wrap=True))
    title = plain(f"{rank}. {finding.id}  ", one_line=True) + plain(finding.title, "bold", one_line=True)
    if finding.confidence == "low":
        title.append(" (low confidence)", style="yellow")
    style = SEVERITY_STYLE.get(finding.severity, "")
    return Panel(Group(*parts), title=title, title_align="left", border_style=style)


def findings_renderables(findings: list[Finding], max_fixes: int = 5) -> list[RenderableType]:
    """The findings table, then the fixes of the top `max_fixes` findings; a note when there are none."""
    if not findings:
        return [Text("no findings: nothing measured points at a bottleneck torchdoctor knows how to fix", style="green")]
    panels = [fix_panel(rank, f) for rank, f in enumerate(ranked(findings)[:max_fixes], 1)]
    tables = [findings_table(findings), evidence_notes(findings)]
    return [r for r in (*tables, *panels) if r is not None]


def print_findings(findings: list[Finding], console: Console, max_fixes: int = 5) -> None:
    """`findings_renderables` on `console`; nothing at all when there are no findings (for commands whose
    own output already says what was measured)."""
    if findings:
        console.print(*findings_renderables(findings, max_fixes))
