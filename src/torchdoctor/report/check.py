"""Renderers of `torchdoctor check`: the console verdict, JSON, a Markdown job summary, JUnit XML and
GitHub workflow annotations, all from one `CheckResult` value; and the progress display.

The console report and the progress lines carry the script's own text (its arguments, its error
and output, operator names from its traces, git refs and subjects): they reach the terminal only
through report/safe_text.py."""

from __future__ import annotations

import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import orjson
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.table import Table

from torchdoctor.check import ERROR, PASS, REGRESSION, SAVED, UNDECIDED, CheckResult, Metric
from torchdoctor.bench import RoundInfo
from torchdoctor.report.format import fmt_bytes, fmt_seconds
from torchdoctor.outputs import write_atomic
from torchdoctor.report.safe_text import cell, clean, markup

_TITLES = {
    PASS: "no regression",
    REGRESSION: "REGRESSION",
    UNDECIDED: "undecided",
    ERROR: "error",
    SAVED: "baseline saved",
}
_STYLES = {PASS: "green", REGRESSION: "bold red", UNDECIDED: "yellow", ERROR: "bold red", SAVED: "green"}
_ICONS = {PASS: "✅", REGRESSION: "❌", UNDECIDED: "⚠️", ERROR: "❌", SAVED: "✅"}


# -- figures -------------------------------------------------------------------------------------------
def fmt_value(metric: Metric, value: float | None) -> str:
    if value is None:
        return "-"
    if metric.unit == "bytes":
        return fmt_bytes(value)
    if metric.unit == "s":
        return fmt_seconds(value)
    return f"{value:,.1f} {metric.unit}"


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:+.1f}%"


def fmt_ci(metric: Metric) -> str:
    if metric.ci_low is None or metric.ci_high is None:
        return "-"
    return f"{_pct(metric.ci_low - 1)} .. {_pct(metric.ci_high - 1)}"


def _floor(metric: Metric) -> str:
    return "-" if metric.noise_floor is None else f"{100 * metric.noise_floor:.1f}%"


def _gate(metric: Metric) -> str:
    if metric.gate is None:
        return "reported"
    return f"{metric.gate} (max {_pct(metric.threshold)})"


def headline(result: CheckResult) -> str:
    """'torchdoctor check: REGRESSION: step time +12.3% ...' in one line."""
    return f"torchdoctor check: {_TITLES[result.decision]}: {result.reason}"


def _sides(result: CheckResult) -> str:
    a = result.a.get("label", "A")
    b = result.b.get("label", "B")
    if result.mode == "save-baseline":
        return f"B {b}"
    return f"B {b} against A {a}"


def _command(result: CheckResult) -> str:
    return " ".join([result.script or "?", *result.argv])


# -- console --------------------------------------------------------------------------------------------
def render_check(result: CheckResult, console: Console) -> None:
    style = _STYLES[result.decision]
    console.print(f"[{style}]{markup(_TITLES[result.decision])}[/]: {markup(result.reason)}")
    if result.observations:
        console.print(f"[dim]{markup(_sides(result), one_line=True)} · {markup(_command(result), one_line=True)} · "
                      f"{markup(result.rounds)} round(s), {markup(result.observations)} observation(s), {result.wall_s:.1f} s[/dim]")
    if result.metrics:
        table = Table(show_edge=False)
        for column in ("metric", "A", "B", "change", "95% CI", "noise floor", "gate"):
            table.add_column(column, justify="left" if column in ("metric", "gate") else "right")
        for m in result.metrics:
            gate_style = _STYLES.get(m.gate or "", "dim") if m.gate != PASS else "green"
            table.add_row(m.label, fmt_value(m, m.a), fmt_value(m, m.b), _pct(m.change), fmt_ci(m), _floor(m),
                          f"[{gate_style}]{_gate(m)}[/]")
        console.print(table)
    location = result.location
    if location is not None:
        _render_location(result, console)
    if result.error and result.error.get("detail"):
        console.print(f"[dim]{markup(result.error['detail'].rstrip())}[/dim]")
    for warning in result.warnings:
        console.print(f"[yellow]warning[/yellow]: {markup(warning)}")
    if result.work_dir and result.observations and result.decision in (ERROR, REGRESSION):
        console.print(f"[dim]logs and traces: {markup(result.work_dir)}[/dim]")


def _render_location(result: CheckResult, console: Console) -> None:
    location = result.location
    assert location is not None
    console.print("[bold]Where the change lives[/bold]")
    if location.phases:
        table = Table(title="phases of the step (mean per step)", show_edge=False)
        for column in ("phase", "A", "B", "change", "share of the change"):
            table.add_column(column, justify="left" if column == "phase" else "right")
        for row in location.phases:
            mark = " [red]grew[/red]" if row["grew"] else ""
            share = "-" if row["share"] is None else f"{100 * row['share']:.0f}%"
            table.add_row(row["phase"] + mark, fmt_seconds(row["a_s"]), fmt_seconds(row["b_s"]),
                          _signed_seconds(row["delta_s"]), share)
        console.print(table)
    for key, title in (("ops", "operators that grew (self time per step, profiled window)"),
                       ("kernels", "kernels that grew (per step)")):
        rows = getattr(location, key)
        if rows:
            table = Table(title=title, show_edge=False)
            for column in ("name", "A", "B", "change", "status"):
                table.add_column(column, justify="left" if column in ("name", "status") else "right")
            for row in rows:
                table.add_row(cell(row["name"], limit=70), fmt_seconds(row["us_per_step_a"] / 1e6),
                              fmt_seconds(row["us_per_step_b"] / 1e6),
                              _signed_seconds(row["delta_us_per_step"] / 1e6), cell(row["status"]))
            console.print(table)
    if location.memory_categories:
        table = Table(title="memory at the step's peak, by category", show_edge=False)
        for column in ("category", "A", "B", "change"):
            table.add_column(column, justify="left" if column == "category" else "right")
        for row in location.memory_categories:
            table.add_row(row["category"], fmt_bytes(row["a_bytes"]), fmt_bytes(row["b_bytes"]),
                          ("+" if row["delta_bytes"] > 0 else "") + fmt_bytes(row["delta_bytes"]))
        console.print(table)
    for label, findings in (("appeared", location.findings_appeared), ("vanished", location.findings_vanished)):
        for f in findings:
            console.print(f"finding {markup(label)}: [bold]{markup(f['id'])}[/bold] ({markup(f['severity'])}) "
                          f"{markup(f['title'])}")
    for note in location.notes:
        console.print(f"[dim]{markup(note)}[/dim]")
    if location.traces:
        console.print(f"[dim]traces: A {markup(location.traces.get('A'))}, B {markup(location.traces.get('B'))} "
                      f"(`torchdoctor trace diff A B`)[/dim]")


def _signed_seconds(value: float) -> str:
    return ("+" if value > 0 else "-" if value < 0 else "") + fmt_seconds(abs(value))


# -- JSON --------------------------------------------------------------------------------------------------
def to_json(result: CheckResult) -> bytes:
    return orjson.dumps(result.to_dict(), option=orjson.OPT_INDENT_2 | orjson.OPT_SERIALIZE_NUMPY)


# -- Markdown (a job summary) --------------------------------------------------------------------------------
def _md(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def to_markdown(result: CheckResult) -> str:
    lines = [f"## {_ICONS[result.decision]} torchdoctor check: {_TITLES[result.decision]}", "",
             _md(result.reason), "",
             f"**B** {_md(result.b.get('label', '-'))}" + (
                 "" if result.mode == "save-baseline" else f" against **A** {_md(result.a.get('label', '-'))}"),
             f"· `{_md(_command(result))}` · {result.rounds} round(s), {result.observations} observation(s), "
             f"{result.wall_s:.1f} s", ""]
    if result.dirty:
        lines += [f"> The working tree has uncommitted changes ({len(result.dirty_files)} file(s)); it was "
                  "measured as it is.", ""]
    if result.metrics:
        lines += ["| metric | A | B | change | 95% CI | noise floor | gate |", "|---|---:|---:|---:|---:|---:|---|"]
        for m in result.metrics:
            lines.append(f"| {m.label} | {fmt_value(m, m.a)} | {fmt_value(m, m.b)} | {_pct(m.change)} | {fmt_ci(m)} "
                         f"| {_floor(m)} | {_gate(m)} |")
        lines.append("")
    location = result.location
    if location is not None:
        lines += ["### Where the change lives", ""]
        if location.phases:
            lines += ["| phase | A | B | change | share |", "|---|---:|---:|---:|---:|"]
            for row in location.phases:
                share = "-" if row["share"] is None else f"{100 * row['share']:.0f}%"
                name = f"**{row['phase']}**" if row["grew"] else row["phase"]
                lines.append(f"| {name} | {fmt_seconds(row['a_s'])} | {fmt_seconds(row['b_s'])} | "
                             f"{_signed_seconds(row['delta_s'])} | {share} |")
            lines.append("")
        for key, title in (("ops", "Operators that grew"), ("kernels", "Kernels that grew")):
            rows = getattr(location, key)
            if rows:
                lines += [f"{title} (per step, profiled window):", "", "| name | A | B | change | status |",
                          "|---|---:|---:|---:|---|"]
                lines += [f"| `{_md(r['name'][:90])}` | {fmt_seconds(r['us_per_step_a'] / 1e6)} | "
                          f"{fmt_seconds(r['us_per_step_b'] / 1e6)} | {_signed_seconds(r['delta_us_per_step'] / 1e6)} "
                          f"| {r['status']} |" for r in rows]
                lines.append("")
        if location.memory_categories:
            lines += ["| memory category | A | B |", "|---|---:|---:|"]
            lines += [f"| {r['category']} | {fmt_bytes(r['a_bytes'])} | {fmt_bytes(r['b_bytes'])} |"
                      for r in location.memory_categories]
            lines.append("")
        for label, findings in (("appeared", location.findings_appeared), ("vanished", location.findings_vanished)):
            lines += [f"- finding {label}: **{f['id']}** ({f['severity']}) {_md(f['title'])}" for f in findings]
        lines += [f"- {_md(note)}" for note in location.notes]
        lines.append("")
    if result.error:
        lines += [f"**Error** ({result.error['kind']}" + (f", side {result.error['side']}" if result.error.get("side")
                                                         else "") + f"): {_md(result.error['message'])}", ""]
        if result.error.get("detail"):
            lines += ["```", result.error["detail"].rstrip()[-3000:], "```", ""]
    lines += [f"> warning: {_md(w)}" for w in result.warnings]
    return "\n".join(lines).rstrip() + "\n"


# -- JUnit XML ------------------------------------------------------------------------------------------------
def to_junit(result: CheckResult) -> str:
    """One test suite; one test case per gated metric (a failure on a regression, an error when
    undecided), or one 'check' case carrying the error."""
    suite = ET.Element("testsuite", name="torchdoctor check", time=f"{result.wall_s:.3f}")
    properties = ET.SubElement(suite, "properties")
    for key, value in (("decision", result.decision), ("mode", result.mode), ("a", result.a.get("label", "")),
                       ("b", result.b.get("label", "")), ("rounds", result.rounds), ("dirty", result.dirty)):
        ET.SubElement(properties, "property", name=key, value=str(value))
    cases: list[tuple[str, str | None, str]] = []  # (name, outcome element or None, message)
    if result.decision in (ERROR,) or not result.gated:
        outcome = None if result.decision in (PASS, SAVED) else "error"
        cases.append(("check", outcome, result.reason))
    for m in result.gated:
        message = f"{m.label} {_pct(m.change)} (95% CI {fmt_ci(m)}): {m.gate} (max {_pct(m.threshold)})"
        outcome = {REGRESSION: "failure", UNDECIDED: "error"}.get(m.gate or "")
        if result.decision == UNDECIDED and result.stop_reason == "interrupted":
            outcome = "error"
        cases.append((m.label, outcome, message))
    failures = sum(c[1] == "failure" for c in cases)
    errors = sum(c[1] == "error" for c in cases)
    suite.set("tests", str(len(cases)))
    suite.set("failures", str(failures))
    suite.set("errors", str(errors))
    suite.set("skipped", "0")
    for name, outcome, message in cases:
        case = ET.SubElement(suite, "testcase", classname=f"torchdoctor.check.{result.mode}", name=name,
                             time=f"{result.wall_s:.3f}")
        if outcome is not None:
            element = ET.SubElement(case, outcome, message=message,
                                    type=result.decision if outcome == "error" else REGRESSION)
            detail = result.error.get("detail") if result.error else None
            element.text = headline(result) + ("\n" + detail if detail else "")
        out = ET.SubElement(case, "system-out")
        out.text = to_markdown(result)
    root = ET.Element("testsuites", name="torchdoctor check", tests=str(len(cases)), failures=str(failures),
                      errors=str(errors), time=f"{result.wall_s:.3f}")
    root.append(suite)
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


# -- GitHub annotations ------------------------------------------------------------------------------------------
def _escape_data(text: str) -> str:
    """The text for a workflow command: without control characters (clean), its line ends escaped."""
    return clean(text).replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def to_annotations(result: CheckResult) -> list[str]:
    """GitHub workflow commands (`::error title=...::message`), one per line."""
    levels = {PASS: "notice", SAVED: "notice", REGRESSION: "error", UNDECIDED: "warning", ERROR: "error"}
    level = levels[result.decision]
    title = f"torchdoctor check: {_TITLES[result.decision]}"
    message = f"{result.reason} ({_sides(result)}; {result.rounds} rounds, {result.wall_s:.0f} s)"
    lines = [f"::{level} title={_escape_property(title)}::{_escape_data(message)}"]
    location = result.location
    if location is not None and location.grew:
        lines.append(f"::{level} title={_escape_property('torchdoctor check: where it grew')}::"
                     + _escape_data("grew: " + ", ".join(location.grew)))
    lines += [f"::warning title={_escape_property('torchdoctor check')}::{_escape_data(w)}" for w in result.warnings]
    return lines


# -- all of them ---------------------------------------------------------------------------------------------------
def write_outputs(result: CheckResult, *, console: Console, json_out: str | None = None,
                  markdown_out: Path | None = None, junit_out: Path | None = None, annotations: bool = False) -> None:
    """The console report, then every file asked for; annotations and `--json -` go to stdout."""
    render_check(result, console)
    if markdown_out is not None:
        write_atomic(markdown_out, to_markdown(result).encode(), what="--markdown")
    if junit_out is not None:
        write_atomic(junit_out, to_junit(result).encode(), what="--junit")
    if json_out is not None:
        if json_out == "-":
            sys.stdout.write(to_json(result).decode() + "\n")
        else:
            write_atomic(json_out, to_json(result), what="--json")
    if annotations:
        sys.stdout.write("".join(line + "\n" for line in to_annotations(result)))
    sys.stdout.flush()


# -- progress ------------------------------------------------------------------------------------------------------
class RichCheckProgress:
    """`check.CheckProgress` as a progress bar on a terminal; elsewhere (CI logs) one plain line per
    phase and per round."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.live = console.is_terminal
        self._bar = Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                             TimeElapsedColumn(), console=console, transient=True, disable=not self.live)
        self._task = self._bar.add_task("starting", total=None)

    def __enter__(self) -> RichCheckProgress:
        self._bar.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._bar.stop()

    def phase(self, text: str) -> None:
        if self.live:
            self._bar.update(self._task, description=markup(text, one_line=True), total=None, completed=0)
        else:
            self.console.print(f"check: {markup(text)}", highlight=False)

    def round(self, info: RoundInfo, elapsed_s: float, budget_s: float) -> None:
        text = f"round {info.rounds_done} of at most {info.max_rounds} ({elapsed_s:.0f} s of {budget_s:g} s)"
        if self.live:
            self._bar.update(self._task, description="measuring, interleaved", completed=info.rounds_done,
                             total=info.max_rounds)
        else:
            self.console.print(f"check: {markup(text)}", highlight=False)
