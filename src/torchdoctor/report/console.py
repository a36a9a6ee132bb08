"""Terminal renderer: the step-time breakdown, the main figures and the findings of a Record.

A Record may come from someone else's file: every string in it is printed through
report/safe_text.py, a figure of the wrong type shows as '-', and long lists are cut (the JSON
keeps them whole). The Record's caveats (a truncated or repaired trace, a busy machine:
analyse/caveats.py) come first, in bold, so nobody reads the figures and findings below them at
full value.
"""

from __future__ import annotations

from io import StringIO
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from torchdoctor.accounting import Accounting
from torchdoctor.analyse.caveats import record_caveats
from torchdoctor.compile.report import CompileReport
from torchdoctor.environment import SystemSection
from torchdoctor.jsonfields import readable
from torchdoctor.memory.breakdown import MemoryBreakdown
from torchdoctor.memory.report import MemoryReport
from torchdoctor.record import Record
from torchdoctor.report.accounting import accounting_renderables, earned_healthy
from torchdoctor.report.console_findings import findings_renderables
from torchdoctor.rules import all_rules
from torchdoctor.report.format import fmt_bytes, fmt_phase, fmt_seconds, fmt_shares, median_step_parts
from torchdoctor.report.safe_text import cell, plain
from torchdoctor.trace.summary.trace_summary import TraceSummary

#: Warnings printed at most; the rest are counted (every one is in the JSON).
MAX_WARNINGS = 20

_PARTS = (
    ("data_wait_fraction", "DataLoader wait", "magenta"),
    ("forward_fraction", "forward", "cyan"),
    ("backward_fraction", "backward", "blue"),
    ("optimizer_fraction", "optimizer step", "green"),
    ("other_fraction", "other (not in a hook)", "grey50"),
)
_DETECTION = {
    "marker": "torchdoctor.step() markers",
    "optimizer": "optimizer.step() calls",
    "backward": "backward() calls",
    "forward": "calls of the outermost module",
}


def err_console() -> Console:
    return Console(stderr=True)


def print_error(message: str) -> None:
    err_console().print(Text("torchdoctor: error: ", style="bold red") + plain(message))


def _section(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _bar(fraction: float, width: int = 30) -> str:
    return "█" * max(0, round(fraction * width))


def memory_line(breakdown: MemoryBreakdown) -> str:
    """'33.6 MiB on cpu during backward: activations 64%, optimizer state 20%, ...' (plain text:
    print it as a Text, it holds the Record's device and phase names)."""
    peak = breakdown.peak_bytes or 0
    parts = sorted(((v, k) for k, v in breakdown.categories_bytes.items() if v), reverse=True)
    shares = ", ".join(f"{k.replace('_', ' ')} {v / peak:.0%}" for v, k in parts[:3]) if peak else ""
    where = f" {fmt_phase(breakdown.phase)}" if breakdown.phase else ""
    return f"{fmt_bytes(peak)} on {breakdown.device}{where}" + (f": {shares}" if shares else "")


def breakdown_table(record: Record) -> Table:
    """Shares and times of the median step: the median of each part and the median step (the
    statistic the findings read), "other" the difference. Without steps (a Record that kept only
    the summary), the summary's shares of the summed wall time."""
    summary = record.summary
    medians = median_step_parts(record.steps)
    table = Table(title="Where each step's time goes (host wall time, median step)", title_justify="left")
    table.add_column("part", overflow="fold")
    table.add_column("share", justify="right", overflow="fold")
    table.add_column("per step", justify="right", overflow="fold")
    table.add_column("", overflow="fold")
    rows = []
    for key, label, colour in _PARTS:
        part = key.removesuffix("_fraction")
        if medians is not None:
            seconds = medians[part]
            fraction = seconds / medians["step"] if medians["step"] else 0.0
        else:
            fraction = getattr(summary, key)
            if fraction is None:
                continue
            seconds = fraction * summary.step_s if summary.step_s else None
        rows.append((key, label, colour, fraction, seconds))
    largest = max(rows, key=lambda r: r[3] or 0.0)[0] if rows else None
    # The parts' medians may add up to more than the median step: shares of their sum then, so that
    # the column adds up to 100% (a sum over 100% reads as a defect, not as rounding).
    whole = max(1.0, sum(r[3] or 0.0 for r in rows))
    shares = fmt_shares([(r[3] or 0.0) / whole for r in rows])
    for (key, label, colour, fraction, seconds), share in zip(rows, shares):
        style = "bold" if key == largest else ""
        table.add_row(Text(label, style=style), share, fmt_seconds(seconds),
                      Text(_bar(fraction / whole), style=colour))
    return table


def figures_table(record: Record) -> Table:
    s = record.summary
    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold", overflow="fold")
    table.add_column(overflow="fold")
    table.add_row("script", cell(" ".join([record.script or "-", *record.argv])))
    table.add_row("steps detected by", _DETECTION.get(record.step_detection or "", "-"))
    spread = f" (p10 {fmt_seconds(s.step_s_p10)}, p90 {fmt_seconds(s.step_s_p90)})" if s.step_s_p10 else ""
    table.add_row("median step", fmt_seconds(s.step_s) + spread + f" over {s.num_steps} steps")
    if s.samples_per_s:
        table.add_row("throughput", f"{s.samples_per_s:,.1f} samples/s")
    load = SystemSection.summary_of(record.system)
    process, machine = load.process_cpu_percent_mean, load.machine_cpu_percent_mean
    if process is not None and machine is not None:
        table.add_row("CPU", f"process {process:.0f}% of a core, machine {machine:.0f}%")
    gpu = load.gpu_util_percent_mean
    if gpu is not None:
        table.add_row("GPU utilisation", f"{gpu:.0f}% (NVML)")
    traces = _section(record.artifacts).get("traces")
    for trace in traces if isinstance(traces, list) else []:
        table.add_row("trace", cell(trace))
    memory = readable(MemoryReport.from_dict, record.memory)
    if memory and memory.breakdown and memory.breakdown.peak_bytes:
        table.add_row("memory peak", cell(memory_line(memory.breakdown)))
    compiled = readable(CompileReport.from_dict, record.compile)
    if compiled is not None:
        table.add_row("torch.compile", cell(f"{compiled.graph_count} graphs, {compiled.graph_break_count} graph "
                                            f"breaks, {len(compiled.recompiles)} recompiles"))
    return table


def _trace_warnings(record: Record) -> list[str]:
    """The trace analysis' warnings that are not caveats (the caveats are `record_caveats`')."""
    trace = readable(TraceSummary.from_dict, record.trace)
    return [w for w in trace.warnings if w not in trace.caveats] if trace is not None else []


def render_caveats(caveats: list[str], console: Console) -> None:
    """The Record's caveats, before anything that may have been computed from its input."""
    if not caveats:
        return
    console.print(plain("Caveats that change how the figures below read (findings are low confidence):",
                        "bold yellow"))
    for caveat in caveats[:MAX_WARNINGS]:
        console.print(plain("  caveat: ", "bold yellow") + plain(caveat))
    if len(caveats) > MAX_WARNINGS:
        console.print(plain(f"  ... and {len(caveats) - MAX_WARNINGS} more caveats (all are in the JSON)", "yellow"))


def render_warnings(warnings: list[str], console: Console) -> None:
    for warning in warnings[:MAX_WARNINGS]:
        console.print(plain("warning: ", "yellow") + plain(warning))
    if len(warnings) > MAX_WARNINGS:
        console.print(plain(f"... and {len(warnings) - MAX_WARNINGS} more warnings (all are in the JSON)", "yellow"))


def render_record(record: Record, console: Console) -> None:
    """The diagnose report: input caveats, figures, breakdown, findings ranked by upside, warnings
    and exit note."""
    render_caveats(record_caveats(record), console)
    if record.summary.num_steps:
        console.print(figures_table(record))
        console.print(breakdown_table(record))
    accounting = readable(Accounting.from_dict, record.accounting)
    renderables = accounting_renderables(accounting) if accounting is not None else []
    if not any(f.severity != "info" for f in record.findings) and (record.summary.num_steps or record.kind == "traces"):
        renderables.extend(earned_healthy(accounting, len(all_rules())))
    if record.findings:
        renderables.extend(findings_renderables(record.findings))
    for renderable in renderables:
        console.print(renderable)
    render_warnings([*_trace_warnings(record), *record.warnings], console)
    if record.exit.status != 0:
        console.print(Text("run failed: ", style="bold red") + plain(record.exit.message))


class TextRenderer:
    """The terminal report as plain text (no colours), for `--format txt` or a `.txt` file."""

    extension = "txt"

    def render(self, record: Record) -> str:
        console = Console(file=StringIO(), width=120, color_system=None, record=True)
        render_record(record, console)
        return console.export_text()
