"""Terminal tables of stored runs: `runs list` and `runs compare`.

Scripts, arguments, ids and every compared value come from stored Records (which may have been
imported from someone else's file): they are printed through report/safe_text.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from torchdoctor.analyse import RunComparison
from torchdoctor.record import RunRow
from torchdoctor.report.format import fmt_seconds
from torchdoctor.report.safe_text import cell, clean, markup


def runs_table(rows: list[RunRow]) -> Table:
    """A run a row, two lines: its id whole; when (date over time); the script's name over its
    arguments, each cropped to the width (`runs show` has them whole); the median step over how the run
    ended ("ok", or its exit reason)."""
    table = Table(title="Stored runs (newest first)", title_justify="left")
    # An id is what the user copies into `runs show`: never cropped, whatever the width.
    table.add_column("id", no_wrap=True, min_width=max((len(row.run_id) for row in rows), default=2))
    table.add_column("when", no_wrap=True)
    table.add_column("script")  # the one column narrowed to fit: its lines are cropped, never wrapped
    table.add_column("step / exit", justify="right", no_wrap=True, overflow="ellipsis")
    for row in rows:
        script = clean(Path(row.script).name if row.script else "(traces)", one_line=True)
        arguments = clean(" ".join(row.argv), one_line=True)
        exit_text = "ok" if row.exit_status == 0 else clean(row.exit_reason or row.exit_status, one_line=True)
        if row.damaged:
            exit_text = clean(row.damaged, one_line=True)
        table.add_row(cell(row.run_id), _when(row.created_at),
                      Text(f"{script}\n{arguments}".rstrip("\n"), no_wrap=True, overflow="ellipsis"),
                      Text(f"{fmt_seconds(row.step_s)}\n{exit_text}"))
    return table


def _when(created_at: str) -> Text:
    """An ISO timestamp as its date over its time to the minute (anything else as it is)."""
    text = clean(created_at, one_line=True)
    date, sep, time = text.partition("T")
    return Text(f"{date}\n{time[:5]}") if sep else Text(text)


def _cell(value: Any) -> Text:
    if isinstance(value, float):
        return Text(f"{value:.4g}")
    return cell(value)


def render_comparison(comparison: RunComparison, console: Console) -> None:
    table = Table(title=f"A = {markup(comparison.a_id)}   B = {markup(comparison.b_id)}", title_justify="left")
    for column in ("figure", "A", "B"):
        table.add_column(column, overflow="fold")
    for key, a, b in comparison.summary_rows:
        table.add_row(cell(key), _cell(a), _cell(b))
    console.print(table)
    change, verdict = comparison.step_change, comparison.verdict
    if change is not None:
        line = f"median step time: {100 * change:+.1f}% (B against A)"
        if verdict:
            line += (f"; verdict: B is {markup(verdict['verdict'])} (ratio {verdict['ratio']:.3f}, "
                     f"95% CI {verdict['ci_low']:.3f}-{verdict['ci_high']:.3f})")
        console.print(line)
    for title, rows in (("environment", comparison.env_diff), ("configuration", comparison.config_diff)):
        if not rows:
            console.print(f"no difference in {markup(title)}")
            continue
        diff = Table(title=f"What differs in {title}", title_justify="left")
        for column in ("key", "A", "B"):
            diff.add_column(column, overflow="fold")
        for key, a, b in rows:
            diff.add_row(cell(key), _cell(a), _cell(b))
        console.print(diff)
