"""Terminal renderer: the step-time breakdown, the main figures and the findings of a Record."""

from __future__ import annotations

from io import StringIO
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from torchdoctor.record import Record
from torchdoctor.report.console_findings import findings_renderables
from torchdoctor.report.format import fmt_bytes, fmt_percent, fmt_phase, fmt_seconds, median_step_parts

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
    err_console().print(Text("torchdoctor: error: ", style="bold red") + Text(message))




def _bar(fraction: float, width: int = 30) -> str:
    return "█" * max(0, round(fraction * width))


def memory_line(breakdown: dict[str, Any]) -> str:
    """'33.6 MiB on cpu during backward: activations 64%, optimizer state 20%, ...'."""
    peak = breakdown["peak_bytes"]
    parts = sorted(((v, k) for k, v in (breakdown.get("categories_bytes") or {}).items() if v), reverse=True)
    shares = ", ".join(f"{k.replace('_', ' ')} {v / peak:.0%}" for v, k in parts[:3])
    where = f" {fmt_phase(breakdown.get('phase'))}" if breakdown.get("phase") else ""
    return f"{fmt_bytes(peak)} on {breakdown.get('device', '?')}{where}" + (f": {shares}" if shares else "")


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
    for key, label, colour, fraction, seconds in rows:
        style = "bold" if key == largest else ""
        table.add_row(Text(label, style=style), fmt_percent(fraction), fmt_seconds(seconds),
                      Text(_bar(fraction), style=colour))
    return table


def figures_table(record: Record) -> Table:
    s = record.summary
    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold", overflow="fold")
    table.add_column(overflow="fold")
    table.add_row("script", Text(" ".join([record.script or "-", *record.argv])))
    table.add_row("steps detected by", _DETECTION.get(record.step_detection or "", "-"))
    spread = f" (p10 {fmt_seconds(s.step_s_p10)}, p90 {fmt_seconds(s.step_s_p90)})" if s.step_s_p10 else ""
    table.add_row("median step", fmt_seconds(s.step_s) + spread + f" over {s.num_steps} steps")
    if s.samples_per_s:
        table.add_row("throughput", f"{s.samples_per_s:,.1f} samples/s")
    cpu = record.system.get("summary", {}) if record.system else {}
    if cpu.get("process_cpu_percent_mean") is not None:
        table.add_row("CPU", f"process {cpu['process_cpu_percent_mean']:.0f}% of a core, "
                             f"machine {cpu['machine_cpu_percent_mean']:.0f}%")
    if cpu.get("gpu_util_percent_mean") is not None:
        table.add_row("GPU utilisation", f"{cpu['gpu_util_percent_mean']:.0f}% (NVML)")
    for trace in record.artifacts.get("traces", []):
        table.add_row("trace", Text(trace))
    memory = (record.memory or {}).get("breakdown") or {}
    if memory.get("peak_bytes"):
        table.add_row("memory peak", memory_line(memory))
    if record.compile:
        c = record.compile
        table.add_row("torch.compile", f"{c.get('graph_count')} graphs, {c.get('graph_break_count', 0)} graph "
                                       f"breaks, {len(c.get('recompiles', []))} recompiles")
    return table


def render_record(record: Record, console: Console) -> None:
    """The diagnose report: figures, breakdown, findings ranked by upside, warnings and exit note."""
    if record.summary.num_steps:
        console.print(figures_table(record))
        console.print(breakdown_table(record))
    if record.summary.num_steps or record.findings:
        for renderable in findings_renderables(record.findings):
            console.print(renderable)
    for warning in record.warnings:
        console.print(Text("warning: ", style="yellow") + Text(warning))
    if record.exit.status != 0:
        console.print(Text("run failed: ", style="bold red") + Text(record.exit.message))


class TextRenderer:
    """The terminal report as plain text (no colours), for `--format txt` or a `.txt` file."""

    extension = "txt"

    def render(self, record: Record) -> str:
        console = Console(file=StringIO(), width=120, color_system=None, record=True)
        render_record(record, console)
        return console.export_text()
