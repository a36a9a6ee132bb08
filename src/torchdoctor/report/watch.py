"""The whole run (`torchdoctor watch`) on the terminal: where the wall time went, goodput and
badput, what changed over time; while it runs, the live panel a terminal gets and the plain
progress line a pipe or a CI log gets."""

from __future__ import annotations

from rich.console import Console
from rich.panel import Panel
from rich.table import Table

from torchdoctor.goodput import WholeRun
from torchdoctor.goodput.section import Straggler
from torchdoctor.goodput.live import LiveView
from torchdoctor.goodput.ranks import RATIO
from torchdoctor.report.format import fmt_bytes, fmt_percent, fmt_seconds
from torchdoctor.report.safe_text import cell, markup, plain


def _when(steps: int | None, period: int | None) -> str:
    if period:
        return f"every {period} steps"
    return f"{steps} steps" if steps else ""


def render_whole_run(run: WholeRun, console: Console, *, stream: str | None = None) -> None:
    """The breakdown table (80 columns), then each trend's title and upside (the findings, printed
    before it, carry their evidence and fix)."""
    step = f", median step {fmt_seconds(run.step_s)}" if run.step_s else ""
    console.print(f"\n[bold]Whole run[/bold]: {fmt_seconds(run.wall_s)} from the process's start to its "
                  f"exit, {markup(run.steps)} steps{step}, ended: {markup(run.ended, one_line=True)}")
    console.print(f"goodput (steady steps): {fmt_seconds(run.goodput_s)}, {fmt_percent(run.goodput_share)}")
    table = Table(box=None, pad_edge=False, show_header=True, header_style="dim")
    table.add_column("where the time went", overflow="fold", max_width=44)
    table.add_column("when", overflow="fold", max_width=16)
    table.add_column("time", justify="right")
    table.add_column("share", justify="right")
    for part in run.parts:
        if part.seconds <= 0 and part.kind not in ("steady", "startup"):
            continue
        style = "green" if part.kind == "steady" else ""
        label = part.label if part.kind in ("slow",) or not part.cause else f"{part.label}: {part.cause}"
        table.add_row(cell(label, style), cell(_when(part.steps, part.period_steps) if part.kind
                                               in ("slow", "warmup", "windows") else ""),
                      fmt_seconds(part.seconds), fmt_percent(part.seconds / run.wall_s if run.wall_s else None))
    console.print(table)
    for trend in run.trends:  # each is a finding above, with its evidence and fix
        upside = f" (up to {fmt_seconds(trend.upside_s)} of the run)" if trend.upside_s else ""
        console.print(f"[yellow]![/yellow] {markup(trend.title, one_line=True)}{upside}")
    _print_ranks(run, console)
    _print_profiles(run, console)
    if stream:
        console.print(f"[dim]streamed {fmt_bytes(run.disk_bytes)} to {markup(stream, one_line=True)}[/dim]")


def _print_ranks(run: WholeRun, console: Console) -> None:
    """Each rank's goodput (a torchrun job), then each straggler: which rank, when, by how much."""
    if not run.ranks:
        return
    table = Table(box=None, pad_edge=False, show_header=True, header_style="dim")
    for name in RANK_COLUMNS:
        table.add_column(name, justify="left" if name == "ended" else "right")
    for row in rank_rows(run):
        table.add_row(*row[:-1], cell(row[-1]))
    console.print(f"goodput by rank (the table above is rank {run.ranks[0].rank:d}'s)")
    console.print(table)
    if not run.stragglers:
        console.print(f"stragglers: none (no rank's own step time was {RATIO:g} times the others' over a stretch)")
    for straggler in run.stragglers:
        console.print(f"[yellow]![/yellow] {markup(straggler_words(straggler, run.wall_s), one_line=True)}")


def straggler_words(s: Straggler, wall_s: float) -> str:
    """A straggler in words: which rank, which steps and when, by how much, what it cost."""
    return (f"straggler: rank {s.rank:d}, steps {s.first_step:d}-{s.last_step:d} (at {fmt_seconds(s.start_s)} to "
            f"{fmt_seconds(s.end_s)}): {fmt_seconds(s.step_s)} a step, {s.step_s / s.others_step_s:.1f}x the "
            f"others' {fmt_seconds(s.others_step_s)}; {fmt_seconds(s.lost_s)} of the run "
            f"({fmt_percent(s.lost_s / wall_s if wall_s else None)})")


def rank_rows(run: WholeRun) -> list[list[str]]:
    """Each rank's row: rank, steps, median step, goodput, its share of the wall time, how it ended."""
    return [[str(r.rank), str(r.steps), fmt_seconds(r.step_s) if r.step_s else "", fmt_seconds(r.goodput_s),
             fmt_percent(r.goodput_share), r.ended] for r in run.ranks]


RANK_COLUMNS = ("rank", "steps", "median step", "goodput", "share", "ended")


def _print_profiles(run: WholeRun, console: Console, top: int = 3) -> None:
    """The first and the last periodic profiler window's largest operators, one line each."""
    if not run.profiles:
        return
    kept = "" if len(run.profiles) == run.profiles_seen else f", {len(run.profiles)} kept"
    console.print(f"periodic profiler windows: {run.profiles_seen:d}{kept} (share of "
                  f"{markup(run.profiles[0].clock)} self time)")
    shown = [run.profiles[0], run.profiles[-1]] if len(run.profiles) > 1 else run.profiles[:1]
    for window in shown:
        ops = ", ".join(f"{op.name} {fmt_percent(op.share)}" for op in window.ops[:top])
        console.print(f"  at {fmt_seconds(window.t_s)}, step {window.first_step:d}: {markup(ops, one_line=True)}",
                      overflow="fold")


def _figures(view: LiveView) -> list[tuple[str, str]]:
    """The live figures, as (name, value) pairs; those not known yet are left out."""
    rows = [("elapsed", f"{view.elapsed_s / 60:.1f} min"), ("steps", str(view.steps))]
    if view.steps_per_s is not None:
        rows.append(("steps/s", f"{view.steps_per_s:.1f}"))
    if view.samples_per_s is not None:
        rows.append(("samples/s", f"{view.samples_per_s:.0f}"))
    if view.step_s is not None:
        rows.append(("median step", fmt_seconds(view.step_s)))
    if view.epoch:
        of = f"/{view.epoch_length}" if view.epoch_length is not None else ""
        eta = f", ends in {fmt_seconds(view.epoch_eta_s)}" if view.epoch_eta_s is not None else ""
        rows.append(("epoch", f"{view.epoch}: step {view.epoch_step}{of}{eta}"))
    if view.memory_bytes is not None:
        rows.append(("memory", fmt_bytes(view.memory_bytes)))
    if view.goodput_fraction is not None:
        rows.append(("goodput so far", fmt_percent(view.goodput_fraction)))
    return rows


def live_panel(view: LiveView) -> Panel:
    """The live view on a terminal: the run's figures so far and its last badput event."""
    table = Table.grid(padding=(0, 2))
    table.add_column(style="dim")
    table.add_column(overflow="fold", max_width=60)
    for name, value in _figures(view):
        table.add_row(name, value)
    if view.last_badput:
        table.add_row("last badput", plain(view.last_badput, one_line=True, limit=120))
    return Panel(table, title="torchdoctor watch", width=78)


def progress_line(view: LiveView) -> str:
    """One line a minute for a pipe or a CI log (not a terminal): the figures of the live view."""
    figures = ", ".join(f"{value} {name}" if name in ("steps", "steps/s", "samples/s") else f"{name} {value}"
                        for name, value in _figures(view)[1:])
    return f"torchdoctor watch: {view.elapsed_s / 60:.1f} min, {figures}"
