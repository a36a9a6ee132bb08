"""Terminal output of `tune`: a progress bar (trial, knob, running best) and the final report.

Trial reasons quote the script's errors, and the diff quotes the script: they are printed through
report/safe_text.py.
"""

from __future__ import annotations

from contextlib import contextmanager
from functools import partial
from typing import Any, Iterator

from rich.console import Console
from rich.progress import (BarColumn, MofNCompleteColumn, Progress, ProgressColumn, Task, TextColumn,
                           TimeElapsedColumn, TimeRemainingColumn)
from rich.syntax import Syntax
from rich.table import Table
from rich.text import Text

from torchdoctor.report.format import fmt_seconds
from torchdoctor.report.notes import row_notes
from torchdoctor.report.safe_text import cell, clean, markup, plain
from torchdoctor.tune.plan import SearchPlan
from torchdoctor.tune.result import TuneResult
from torchdoctor.tune.trial import Trial

_STYLE = {"kept": "green", "accepted": "green", "rejected": "yellow", "failed": "red", "baseline": "cyan",
          "interrupted": "red"}


def knob_value(knob: str, value: Any) -> str:
    """`knob=value`; a dict value (compile's settings) as its `key=value` pairs, which wrap."""
    if isinstance(value, dict):
        return f"{knob}: " + ", ".join(f"{key}={item!r}" for key, item in value.items())
    return f"{knob}={value!r}"


def _label(trial: Trial) -> str:
    return "baseline (no knobs)" if trial.knob is None else knob_value(trial.knob, trial.value)


def _side_by_side(ratio: float | None) -> str:
    return f"x{1 / ratio:.2f}" if ratio else ""


class RichTuneProgress:
    """`TuneProgress` drawn as one rich bar over the trial budget, a line per trial."""

    def __init__(self, progress: Progress, total: int) -> None:
        self.progress = progress
        self.task = progress.add_task("baseline", total=total, best="")
        self.trial = "baseline"

    def _line(self, text: str) -> None:
        self.progress.console.print(text, soft_wrap=True)

    def planned(self, plan: SearchPlan) -> None:
        """Say the plan before the first trial; the bar then counts the planned trials (and the
        baseline), so that its ETA is the plan's."""
        self._line(markup(plan.text()))
        self.progress.update(self.task, total=plan.trials + 1)

    def trial_started(self, index: int, label: str) -> None:
        self.trial = f"trial {index}: {markup(label, one_line=True)}"
        self.progress.update(self.task, description=self.trial)

    def run_started(self, label: str, role: str) -> None:
        run = f"{markup(role)} run: {markup(label, one_line=True)}"
        self.progress.update(self.task, description=f"{self.trial} [dim]({run})[/]")

    def trial_finished(self, trial: Trial, best: Trial) -> None:
        self.progress.advance(self.task)
        self.progress.update(self.task, best=f"best {fmt_seconds(best.step_s)}/step")
        style = _STYLE.get(trial.status, "white")
        reason = trial.reason.partition("\n")[0]  # a failure's output's last lines are in the final report
        self._line(f"  [{style}]{trial.status:<11}[/] {markup(f'{_label(trial):<36}', one_line=True)} "
                   f"{_side_by_side(trial.ratio):>7}  {markup(reason)}")

    def knob_settled(self, knob: str, kept: Trial | None, best: Trial) -> None:
        if kept is not None:
            self._line(f"  [green]{'kept':<11}[/] {markup(f'{_label(kept):<36}', one_line=True)} "
                       f"{_side_by_side(kept.ratio):>7}  (the fastest accepted value of the knob)")
        else:
            self._line(f"  [yellow]{'not kept':<11}[/] {markup(knob)}")

    def confirmation_finished(self, confirmation: dict[str, Any]) -> None:
        style = "green" if confirmation.get("status") == "confirmed" else "yellow"
        self._line(f"  [{style}]{'confirm':<11}[/] {markup(confirmation.get('reason', ''))}")


class _BudgetLeftColumn(ProgressColumn):
    """The time left of `--time-budget`, counted from the bar's start; nothing without a budget."""

    def __init__(self, budget_s: float | None) -> None:
        super().__init__()
        self.budget_s = budget_s

    def render(self, task: Task) -> Text:
        if self.budget_s is None or task.elapsed is None:
            return Text("")
        left = int(max(0.0, self.budget_s - task.elapsed))
        return Text(f"{left // 60}:{left % 60:02d} left", style="progress.remaining")


@contextmanager
def tune_progress(console: Console, total: int, budget_s: float | None = None) -> Iterator[RichTuneProgress]:
    """The bar over `total` trials (the plan's, once told): the trial and its knob, the running
    best, the time elapsed, the estimated time to the last planned trial and, given the time
    budget `budget_s`, the time left of it."""
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
               TextColumn("{task.fields[best]}"), TimeElapsedColumn(), TextColumn("ETA"),
               TimeRemainingColumn(), _BudgetLeftColumn(budget_s))
    with Progress(*columns, console=console, transient=True) as progress:
        yield RichTuneProgress(progress, total)


def render_result(result: TuneResult, console: Console) -> None:
    table = Table(title="torchdoctor tune", show_header=True)
    for column in ("#", "trial", "status", "step", "beside", "speed-up"):
        table.add_column(column, overflow="fold", ratio=1 if column == "trial" else None)
    for trial in result.trials:
        style = _STYLE.get(trial["status"], "white")
        label = knob_value(trial["knob"], trial["value"]) if trial["knob"] else "baseline"
        table.add_row(str(trial["index"]), cell(label), cell(trial["status"], style), fmt_seconds(trial["step_s"]),
                      fmt_seconds(trial["reference_step_s"]) if trial["reference"] else "",
                      _side_by_side(trial["ratio"]))
    console.print(table)
    # A failed run's reason quotes the last lines of its output: they keep their lines, indented.
    reasons = row_notes("why (by #)", [(str(t["index"]), plain(t["reason"] or "")) for t in result.trials])
    if reasons is not None:
        console.print(reasons)
    line = partial(console.print, soft_wrap=True)
    line(f"[bold]{markup(result.summary)}[/]")
    confirmation = result.confirmation or {}
    if result.kept:
        # The paces are each side's median run; a paired speed-up is the rounds' median ratio, which
        # their quotient only approaches (the machine moved between rounds): say which is which.
        paired = (confirmation.get("verdict") or {}).get("paired")
        quotient = "; the speed-up is the rounds' median ratio, not their quotient" if paired else ""
        line(f"baseline {fmt_seconds(result.baseline_step_s)}/step -> best {fmt_seconds(result.best_step_s)}/step "
             f"({markup(result.metric)}, each side's median run{quotient})")
    if confirmation.get("how"):
        line(f"measured: {markup(confirmation['how'])}")
    line(f"search stopped: {markup(result.stop_reason)}")
    _render_search(result, console)
    noise = result.noise
    if noise.get("runs_step_s"):
        runs = ", ".join(fmt_seconds(s) for s in noise["runs_step_s"])
        text = f"baseline runs: {runs} per step"
        if noise.get("disturbed_runs"):
            text += f" ({noise['disturbed_runs']} disagree with the others: disturbed)"
        if noise.get("loss_difference") is not None:
            text += f"; mean loss differs run to run by {noise['loss_difference']:.3%}"
        if noise.get("deterministic"):
            text += "; the script repeats identically (numerics compared step by step)"
        line(text)
    for item in result.overridden:
        line(f"[yellow]overridden:[/] {markup(item['knob'])}={markup(repr(item['value']))}: {markup(item['reason'])}")
    for name in result.numerics_unchecked:
        line(f"[red]numerics unchecked:[/] {markup(name)} was kept without a numerics check "
             "(--accept-unchecked-numerics)")
    _render_claims(result, console)
    _render_changes(result, console)


def _render_search(result: TuneResult, console: Console) -> None:
    """What ordered the search (the knobs the script's structure required, a re-diagnosis), and
    the kept knobs decided under other processes' load."""
    search = result.search or {}
    line = partial(console.print, soft_wrap=True)
    if search.get("rediagnosed"):
        line("the profiled baseline run disagreed with the others (disturbed): the script was "
             "profiled and diagnosed again before the search")
    for item in search.get("required") or []:
        tried = "tried" if item["decided"] else "[yellow]not decided[/]"
        line(f"required by the script's structure: {markup(item['knob'])} ({markup(item['why'])}): {tried}")
    for item in search.get("load_dependent") or []:
        line(f"[yellow]load:[/] {markup(item['note'])}")


_CLAIM_STYLE = {"agrees": "green", "under-claims": "green", "over-claims": "yellow", "slower": "red"}


def _render_claims(result: TuneResult, console: Console) -> None:
    """The diagnosis's claims beside what the knobs measured, so a finding's upside is never the
    last word (docs/tune.md, `findings`)."""
    if not result.findings:
        return
    table = Table(title="the diagnosis's claims, measured", show_header=True)
    for column in ("finding", "claimed", "measured (95% CI)", "claim"):
        table.add_column(column, overflow="fold")
    notes = []
    for row in result.findings:
        measured, fix = "", f"fix tried: {row['knob']}"
        if row["measured_speedup"] is not None:
            ci = row["measured_speedup_ci"]
            measured = f"x{row['measured_speedup']:.2f}" + (f" (x{ci[0]:.2f}-x{ci[1]:.2f})" if ci else "")
            fix = f"fix tried: {knob_value(row['knob'], row['value'])}"
            fix += " on top of kept knobs" if row["tried_on"] else ""
        table.add_row(cell(row["id"]), _claimed(row), measured,
                      cell(row["assessment"], _CLAIM_STYLE.get(row["assessment"], "white")))
        reason = f"; {row['assessment']}: {row['reason']}" if row.get("reason") else ""
        notes.append((markup(row["id"], one_line=True), cell(f"{row['title']}; {fix}{reason}")))
    console.print(table)
    findings = row_notes("the findings", notes)
    if findings is not None:
        console.print(findings)


def _claimed(row: dict) -> str:
    """The finding's claim; the claim for the value tried beside it when tune tried another value."""
    claimed, for_trial = row["claimed_speedup"], row.get("claimed_speedup_for_trial")
    text = f"x{claimed:.2f}"
    if for_trial is not None and abs(for_trial - claimed) > 0.005:
        text += f" (x{for_trial:.2f} for {row['knob']}={row['value']!r})"
    return text


def _print_code(console: Console, code: str, lexer: str) -> None:
    """Code in full: highlighted on a terminal, plain and never wrapped or cropped elsewhere (a CI
    log, a pipe), so that every changed argument stays visible."""
    code = clean(code)  # it quotes the user's files: no control sequences reach the terminal
    if console.is_terminal:
        console.print(Syntax(code, lexer, theme="ansi_dark", word_wrap=True))
    else:
        console.print(code.rstrip("\n"), markup=False, highlight=False, soft_wrap=True)


def _render_changes(result: TuneResult, console: Console) -> None:
    if not result.kept:
        return
    for change in result.changes:
        for site in change.get("sites") or []:
            console.print(f"[cyan]script line:[/] {markup(site['advice'])}", soft_wrap=True)
    if result.diff:
        console.print("make it permanent (diff against your files):")
        _print_code(console, result.diff, "diff")
        check = result.diff_check or {}
        if check.get("ok") is False:
            console.print(f"[red]the diff breaks the script:[/] {markup(check['reason'])}", soft_wrap=True)
        elif check:
            console.print(f"[dim]diff checked: {markup(check['reason'])}[/]", soft_wrap=True)
    for change in result.changes:
        console.print(f"[dim]{markup(change['knob'])}:[/]")
        _print_code(console, change["snippet"], "python")
    console.print("or run it with the knobs applied: torchdoctor run --apply RESULT.json -- SCRIPT ARGS",
                  soft_wrap=True)
