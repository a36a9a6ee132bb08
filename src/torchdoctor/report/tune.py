"""Terminal output of `tune`: a progress bar (trial, knob, running best) and the final report.

Trial reasons quote the script's errors, and the diff quotes the script: they are printed through
report/safe_text.py.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.syntax import Syntax
from rich.table import Table

from torchdoctor.report.format import fmt_seconds
from torchdoctor.report.safe_text import cell, clean, markup
from torchdoctor.tune.result import TuneResult
from torchdoctor.tune.trial import Trial

_STYLE = {"kept": "green", "rejected": "yellow", "failed": "red", "baseline": "cyan", "interrupted": "red"}


class RichTuneProgress:
    """`TuneProgress` drawn as one rich bar over the trial budget."""

    def __init__(self, progress: Progress, total: int) -> None:
        self.progress = progress
        self.task = progress.add_task("baseline", total=total, best="")

    def trial_started(self, index: int, label: str) -> None:
        self.progress.update(self.task, description=f"trial {index}: {markup(label, one_line=True)}")

    def trial_finished(self, trial: Trial, best: Trial) -> None:
        self.progress.advance(self.task)
        self.progress.update(self.task, best=f"best {fmt_seconds(best.step_s)}/step")
        style = _STYLE.get(trial.status, "white")
        label = "baseline" if trial.knob is None else f"{trial.knob}={trial.value!r}"
        self.progress.console.print(f"  [{style}]{trial.status:<9}[/] {markup(f'{label:<40}', one_line=True)} "
                                    f"{fmt_seconds(trial.step_s):>9}/step  {markup(trial.reason)}")


@contextmanager
def tune_progress(console: Console, total: int) -> Iterator[RichTuneProgress]:
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
               TextColumn("{task.fields[best]}"), TimeElapsedColumn())
    with Progress(*columns, console=console, transient=True) as progress:
        yield RichTuneProgress(progress, total)


def render_result(result: TuneResult, console: Console) -> None:
    table = Table(title="torchdoctor tune", show_header=True)
    for column in ("#", "knob", "value", "status", "step", "reason"):
        table.add_column(column, overflow="fold")
    for trial in result.trials:
        style = _STYLE.get(trial["status"], "white")
        table.add_row(str(trial["index"]), cell(trial["knob"] or "baseline"), cell(repr(trial["value"]) if trial["knob"] else ""),
                      cell(trial["status"], style), fmt_seconds(trial["step_s"]), cell(trial["reason"]))
    console.print(table)
    speedup = f"x{result.speedup:.2f}" if result.speedup else "n/a"
    console.print(f"baseline {fmt_seconds(result.baseline_step_s)}/step -> best {fmt_seconds(result.best_step_s)}/step: "
                  f"[bold]{speedup}[/] ({markup(result.metric)}); stopped: {markup(result.stop_reason)}")
    spread = result.noise.get("spread")
    if spread is not None:
        console.print(f"baseline noise: step times spread {spread:.1%} (p10..p90 over median)")
    if result.noise.get("repeat_step_ratio") is not None:
        loss = result.noise.get("loss_difference")
        loss_text = f"mean loss differs by {loss:.3%}" if loss is not None else "no loss recorded"
        console.print(f"run to run (baseline twice): step x{result.noise['repeat_step_ratio']:.3f}, {loss_text}")
    for item in result.overridden:
        console.print(f"[yellow]overridden:[/] {markup(item['knob'])}={markup(repr(item['value']))}: {markup(item['reason'])}")
    _render_changes(result, console)


def _render_changes(result: TuneResult, console: Console) -> None:
    if not result.kept:
        console.print("no knob made the script measurably faster.")
        return
    console.print(f"kept: {markup(', '.join(f'{k}={v!r}' for k, v in result.kept.items()))}")
    if result.diff:
        console.print("make it permanent (diff against your script):")
        console.print(Syntax(clean(result.diff), "diff", theme="ansi_dark"))
    for change in result.changes:
        console.print(f"[dim]{markup(change['knob'])}:[/]")
        console.print(Syntax(clean(change["snippet"]), "python", theme="ansi_dark"))
    console.print("or run it with the knobs applied: torchdoctor run --apply RESULT.json -- SCRIPT ARGS")


