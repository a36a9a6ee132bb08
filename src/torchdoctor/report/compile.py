"""Terminal rendering of `record.compile` (a CompileReport), its eager-vs-compiled comparison, and
the rows of `torchdoctor compile`'s modes.

Function names, file names, guards and failure reasons come from the user's script and torch's
messages about it: they are printed through report/safe_text.py. The compile findings (`advice`)
are rendered by `report.console_findings.print_findings`, as every command's findings are.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from torchdoctor.compile.comparison import Comparison
from torchdoctor.compile.report import CompileReport
from torchdoctor.report.format import fmt_seconds
from torchdoctor.report.safe_text import cell, markup


def _where(filename: str | None, lineno: int | None) -> Text:
    return cell(f"{Path(str(filename)).name}:{lineno}" if filename else "?")


def render_compile(report: CompileReport | None, console: Console) -> None:
    if report is None:
        console.print("nothing was compiled with torch.compile in the observed steps")
        return
    console.print(f"[bold]torch.compile[/bold]: {markup(report.graph_count)} graphs, "
                  f"{markup(report.graph_break_count)} graph breaks, {len(report.recompiles)} "
                  f"recompilations, {report.compile_time_s or 0:.2f} s compiling")  # fmt: skip
    if report.graph_breaks:
        table = Table(title="graph breaks")
        for column in ("where", "count", "reason"):
            table.add_column(column, overflow="fold")
        for b in report.graph_breaks:
            table.add_row(_where(b.filename, b.lineno), cell(b.count), cell(b.reason))
        console.print(table)
    if report.recompiles:
        table = Table(title="recompilations (the guard that failed)")
        for column in ("function", "where", "guard"):
            table.add_column(column, overflow="fold")
        for r in report.recompiles:
            table.add_row(cell(r.function or "?"), _where(r.filename, r.lineno), cell(r.guard))
        console.print(table)
    hit = report.recompile_limit_hit
    if hit:
        console.print(f"[red]recompile limit hit[/red] ({markup(hit.config)} = {markup(hit.limit)}): "
                      "later calls of that code run eagerly")  # fmt: skip
    for failure in report.failures:
        reason = (failure.fail_reason or "").splitlines()
        console.print(f"[red]could not compile[/red] {markup(failure.function or '?', one_line=True)}: "
                      f"{markup(reason[0] if reason else '')}")  # fmt: skip
    for note in report.unavailable:
        console.print(f"[yellow]{markup(note)}[/yellow]")


def render_comparison(comparison: Comparison, console: Console) -> None:
    v = comparison.verdict
    rounds = comparison.rounds or 1
    disagree = "; the runs of one side disagree, so no verdict" if v.decided is False else ""
    if v.ratio is None:
        console.print(f"[bold]compiled vs eager[/bold]: {markup(v.verdict)}{disagree}")
    else:
        # the CI across runs where the runs give one (the run-to-run scatter in), else the bootstrap's
        low, high = v.ci_across_runs or (v.ci_low or float("nan"), v.ci_high or float("nan"))
        runs = f"{rounds} runs a side" if rounds > 1 else "one run a side"
        console.print(f"[bold]compiled vs eager[/bold]: {markup(v.verdict)} (step time ratio {v.ratio:.3f}, "
                      f"95% CI {low:.3f}-{high:.3f}, {markup(runs)}{disagree})")
    payoff = comparison.payoff_steps
    console.print(f"compile time {comparison.compile_time_s or 0:.2f} s; "
                  + (f"repaid after ~{payoff:.0f} steps" if payoff else "not repaid (compiled is not faster)"))
    ops = comparison.operators
    if not ops:
        return
    table = Table(title="operators (time per step, eager -> compiled)")
    for column in ("operator", "status", "eager us", "compiled us"):
        table.add_column(column, justify="left" if column in ("operator", "status") else "right", overflow="fold")
    for row in ops.fused_away + ops.added + ops.remaining:
        table.add_row(cell(row.name, limit=60), row.status, f"{row.us_per_step_a:.0f}", f"{row.us_per_step_b:.0f}")
    console.print(table)



def render_modes(rows: list[dict[str, Any]], console: Console) -> None:
    """One line per compiled variant against eager; not-applicable and failed ones with the reason."""
    if not rows:
        return
    table = Table(title="torch.compile modes vs eager")
    for column in ("mode", "dynamic", "compile time", "step", "graphs", "breaks", "recompiles", "verdict",
                   "ratio"):
        table.add_column(column, overflow="fold")
    for r in (r for r in rows if r["status"] == "measured"):
        v = r["verdict"] or {}
        table.add_row(r["mode"], str(r["dynamic"]), fmt_seconds(r["compile_time_s"]), fmt_seconds(r["step_s"]),
                      str(r["graph_count"]), str(r["graph_break_count"]), str(r["recompile_count"]),
                      v.get("verdict", "-"), f"{v['ratio']:.3f}" if v.get("ratio") is not None else "-")  # fmt: skip
    if table.row_count:
        console.print(table)
    for r in (r for r in rows if r["status"] != "measured"):
        console.print(f"[yellow]{markup(r['mode'])} (dynamic={markup(r['dynamic'])}): {markup(r['status'].replace('_', ' '))}[/yellow]"
                      f" - {markup(r['reason'])}")  # fmt: skip

