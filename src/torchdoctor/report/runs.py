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
from torchdoctor.report.safe_text import cell, markup


def runs_table(rows: list[RunRow]) -> Table:
    table = Table(title="Stored runs (newest first)", title_justify="left")
    # An id is what the user copies into `runs show`: never cropped, whatever the width.
    table.add_column("id", no_wrap=True, min_width=max((len(row.run_id) for row in rows), default=2))
    for column in ("when", "script", "exit", "median step", "samples/s"):
        table.add_column(column, overflow="fold")
    for row in rows:
        command = " ".join([Path(row.script).name if row.script else "(traces)", *row.argv])
        exit_text = "ok" if row.exit_status == 0 else f"{row.exit_status} ({row.exit_reason})"
        sps = f"{row.samples_per_s:,.1f}" if row.samples_per_s else "-"
        table.add_row(cell(row.run_id), cell(row.created_at), cell(command), cell(exit_text), fmt_seconds(row.step_s), sps)
    return table


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
            console.print(f"no difference in {title}")
            continue
        diff = Table(title=f"What differs in {title}", title_justify="left")
        for column in ("key", "A", "B"):
            diff.add_column(column, overflow="fold")
        for key, a, b in rows:
            diff.add_row(cell(key), _cell(a), _cell(b))
        console.print(diff)
