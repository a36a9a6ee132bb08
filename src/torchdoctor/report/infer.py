"""Terminal rendering of an InferResult: the variants, their figures per batch size, the choice.

The model's name and the reasons a variant failed (exception text) are printed through
report/safe_text.py.
"""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from torchdoctor.infer.result import BatchMeasurement, InferResult
from torchdoctor.report.format import fmt_seconds
from torchdoctor.report.safe_text import cell, markup

_STATUS_STYLE = {"ok": "green", "failed": "red", "diverged": "yellow"}
_VERDICT = {"faster": "faster", "slower": "slower", "no clear difference": "~same"}


def render_infer(result: InferResult, console: Console) -> None:
    """Print the variants table, the timing table, and the recommendation."""
    console.print(_variants_table(result))
    console.print(_timing_table(result))
    rec = result.recommendation
    if rec is not None:
        console.print(f"[bold]recommended:[/] {markup(rec.variant)} ({markup(rec.reason)})")


def _variants_table(result: InferResult) -> Table:
    table = Table(title=f"{markup(result.model, one_line=True)} on {markup(result.device)}", title_justify="left")
    for header in ("variant", "status", "prepare", "size", "reason"):
        table.add_column(header, overflow="fold")
    for v in result.variants:
        size = "-" if v.size_bytes is None else f"{v.size_bytes / 2**20:.2f} MiB"
        status = f"[{_STATUS_STYLE[v.status]}]{v.status}[/]"
        table.add_row(cell(v.name), status, fmt_seconds(v.prepare_s), size, cell(v.reason))
    return table


def _timing_table(result: InferResult) -> Table:
    table = Table(title="latency per batch (vs eager: bench verdict x median ratio)", title_justify="left")
    for header in ("variant", "batch", "p50", "p99", "samples/s", "vs eager", "rel err", "top-1"):
        table.add_column(header, justify="left" if header in ("variant", "vs eager") else "right", overflow="fold")
    for v in result.variants:
        for index, m in enumerate(v.measurements):
            table.add_row(cell(v.name if index == 0 else ""), *_cells(m))
    return table


def _cells(m: BatchMeasurement) -> list[str]:
    verdict = "baseline"
    if m.vs_eager is not None:
        verdict = f"{_VERDICT.get(m.vs_eager['verdict'], '?')} x{m.vs_eager['ratio']:.2f}"
    accuracy = m.accuracy
    top1 = accuracy.top1_agreement if accuracy else None
    return [
        str(m.batch_size),
        fmt_seconds(m.latency_s_p50),
        fmt_seconds(m.latency_s_p99),
        f"{m.throughput_samples_per_s:,.0f}",
        verdict,
        f"{accuracy.max_rel_error:.1e}" if accuracy else "-",
        "-" if top1 is None else f"{top1:.2f}",
    ]
