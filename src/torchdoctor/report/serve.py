"""Terminal rendering of load runs and sweeps (the latency/throughput trade-off as a table).

URLs, model names, error kinds and reasons are printed through report/safe_text.py.
"""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from torchdoctor.report.format import fmt_seconds
from torchdoctor.report.safe_text import markup
from torchdoctor.serve.load import LoadResult
from torchdoctor.serve.sweep import SweepResult


def render_load(result: LoadResult, console: Console) -> None:
    """One load run: rates, latency, errors and the batch sizes the server ran."""
    errors = ", ".join(f"{k}: {v}" for k, v in result.errors.items()) or "none"
    batches = " ".join(f"{size}x{n}" for size, n in result.batch_sizes.items()) or (result.batch_sizes_note or "-")
    console.print(
        f"{markup(result.mode)} loop against {markup(result.url)}: {markup(result.sent)} sent, {markup(result.ok)} ok in "
        f"{result.duration_s:.1f} s = {result.achieved_qps:.1f} QPS; p50 {fmt_seconds(result.latency_s_p50)}, "
        f"p99 {fmt_seconds(result.latency_s_p99)}; errors {markup(errors)}\nbatch sizes (size x batches): {markup(batches)}"
    )


def render_sweep(result: SweepResult, console: Console) -> None:
    """Every point sorted by throughput, a bar per QPS, the Pareto front starred, then the choice."""
    table = Table(title=f"sweep: {markup(result.model)} (p99 budget {result.latency_budget_ms:g} ms)", title_justify="left")
    for header in ("batch", "delay ms", "QPS", "", "p50", "p99", "mean batch", "errors", "front"):
        table.add_column(header, justify="right")
    points = sorted(result.points, key=lambda p: p.load.achieved_qps)
    best_qps = max((p.load.achieved_qps for p in points), default=0) or 1
    for p in points:
        front = not any(_dominates(q.load, p.load) for q in points)
        table.add_row(
            str(p.max_batch_size), f"{p.max_delay_ms:g}", f"{p.load.achieved_qps:.0f}",
            "#" * int(20 * p.load.achieved_qps / best_qps), fmt_seconds(p.load.latency_s_p50),
            fmt_seconds(p.load.latency_s_p99), f"{p.load.mean_batch_size or 0:.1f}",
            str(sum(p.load.errors.values())), "*" if front else "",
        )
    console.print(table)
    chosen = result.recommended
    head = f"max batch size {markup(chosen.max_batch_size)}, max delay {chosen.max_delay_ms:g} ms: " if chosen else ""
    console.print(f"[bold]recommended:[/] {head}{markup(result.reason)}")


def _dominates(a: LoadResult, b: LoadResult) -> bool:
    """a is at least as good as b on QPS and p99, and better on one."""
    if a.latency_s_p99 is None or b.latency_s_p99 is None:
        return False
    return (a.achieved_qps >= b.achieved_qps and a.latency_s_p99 <= b.latency_s_p99
            and (a.achieved_qps > b.achieved_qps or a.latency_s_p99 < b.latency_s_p99))
