"""Terminal rendering of a trace report or diff dict with rich (analyses never draw).

Names and paths come from the trace files, so every one is printed through report/safe_text.py.
"""

from __future__ import annotations

from typing import Any, Iterable

from rich.console import Console
from rich.table import Table

from torchdoctor.report.safe_text import cell, markup, plain
from torchdoctor.trace.summary.rank import RankSummary
from torchdoctor.trace.summary.trace_summary import TraceSummary


def render_report(trace: TraceSummary, console: Console, ranks: Iterable[RankSummary] | None = None) -> None:
    """The report: its warnings, each rank's section (`ranks`, read one at a time, where the
    summary holds none of them: a job of many ranks), the comparison across ranks."""
    for warning in trace.warnings:
        label = "caveat: " if warning in trace.caveats else "warning: "
        console.print(plain(label + warning, "bold yellow" if warning in trace.caveats else "yellow"))
    for section in trace.ranks if ranks is None else ranks:
        _render_rank(section, console)
    multi = trace.multi_rank
    if multi.per_rank:
        console.print(
            f"[bold]ranks[/]: {markup(multi.ranks_count)}, slowest rank {markup(multi.slowest_rank)} "
            f"(+{multi.slowest_rank_excess_fraction or 0.0:.1%} over the median), "
            f"stragglers: {markup(list(multi.stragglers) or 'none')}"
        )
        _render_cross_rank(multi.slow_steps or {}, multi.collectives or {}, console)
        _render_slow_devices(multi.slow_devices or {}, console)


def _render_cross_rank(slow_steps: dict[str, Any], collectives: dict[str, Any], console: Console) -> None:
    """The ranks slow at one step and the rank most often last at a collective (docs/trace.md)."""
    if slow_steps.get("count"):
        shown = ", ".join(f"rank {s['rank']} at step {s['step']} (+{s['excess_us'] / 1e3:.1f} ms)"
                          for s in slow_steps["top"][:5])
        console.print(f"[bold]slow at one step[/]: {markup(slow_steps['count'])} (rank, step) pairs; {markup(shown)}")
    counts = collectives.get("last_count_by_rank") or []
    if collectives.get("matched_count") and counts:
        last = max(counts, key=lambda r: r["count"])
        top = (collectives.get("top") or [{}])[0]
        worst = (f"; longest wait: {markup(str(top.get('operation', '')), one_line=True, limit=40)} "
                 f"#{markup(top.get('index'))}, rank {markup(top.get('last_rank'))} last, others waited "
                 f"{top.get('waited_us', 0.0) / 1e3:.1f} ms") if top else ""
        console.print(f"[bold]collectives[/]: {markup(collectives['matched_count'])} matched; most often last: "
                      f"rank {markup(last['rank'])} ({markup(last['count'])} times){worst}")


def _render_slow_devices(slow: dict[str, Any], console: Console) -> None:
    """The ranks whose computation kernels ran slower than the others' on the same work, with the
    kernel group that carries the most device time (docs/trace.md, `slow_devices`)."""
    if not slow.get("groups_compared_count"):
        return
    threshold = slow.get("excess_threshold_fraction", 0.0)
    by_rank = {r["rank"]: r for r in slow.get("by_rank", [])}
    found = ", ".join(f"rank {r} (median +{by_rank[r]['median_excess_fraction']:.0%}, "
                      f"{by_rank[r]['slower_groups_fraction']:.0%} of groups)" for r in slow.get("ranks", []))
    console.print(f"[bold]slow devices[/] (kernels >{threshold:.0%} slower than the other ranks' on most of "
                  f"{markup(slow['groups_compared_count'])} shared kernel groups): {markup(found or 'none')}")
    top = (slow.get("groups") or [{}])[0]
    if top:
        console.print(f"  heaviest group: {markup(top.get('kernel', ''), one_line=True, limit=60)}")
    for left in slow.get("left_out", [])[:5]:
        console.print(f"  rank {markup(left['rank'])} not compared: {markup(left['reason'], one_line=True)}")


def _render_rank(section: RankSummary, console: Console) -> None:
    median = section.step_us_median
    console.rule(f"rank {markup(section.rank)}: {markup(section.path or '', one_line=True)}")
    console.print(f"{markup(section.steps_count)} steps, median step {median / 1e3:.2f} ms" if median else "no steps")
    table = Table(title="step time breakdown (TensorBoard order)")
    table.add_column("category", overflow="fold")
    table.add_column("ms", justify="right", overflow="fold")
    table.add_column("share", justify="right", overflow="fold")
    total = sum(section.breakdown_us.values()) or 1.0
    for key, value in section.breakdown_us.items():
        table.add_row(key.removesuffix("_us"), f"{value / 1e3:.2f}", f"{value / total:.1%}")
    console.print(table)
    ops = Table(title="host operators by self time")
    for column in ("operator", "count", "self ms"):
        ops.add_column(column, justify="left" if column == "operator" else "right", overflow="fold")
    for op in section.host.top_by_self_time:
        ops.add_row(cell(op.name, limit=80), str(op.count), f"{op.self_us / 1e3:.2f}")
    console.print(ops)
    device = section.device
    if device is not None and device.temporal.idle_fraction is not None:
        t = device.temporal
        console.print(
            f"device: idle {t.idle_fraction:.1%}, compute {t.compute_fraction or 0.0:.1%}, "
            f"non-compute {t.non_compute_fraction or 0.0:.1%}; launches {markup(device.launches.launches_count)}; "
            f"max launch queue {markup(device.queue.max_depth or 0)}"
        )
    window = section.window
    if window is not None and window.idle_fraction is not None:
        console.print(
            f"window ({markup(window.kind)}, {window.figure('span_us') / 1e3:.1f} ms): "
            f"kernels {window.figure('kernel_utilisation_fraction'):.1%}; "
            f"GPU idle {window.idle_fraction:.1%} = data {window.figure('idle_data_fraction'):.1%} + sync "
            f"{window.figure('idle_sync_fraction'):.1%} + host {window.figure('idle_host_fraction'):.1%} + device "
            f"{window.figure('idle_device_fraction'):.1%}; DataLoader {window.figure('dataloader_fraction'):.1%}"
        )


def render_diff(data: dict[str, Any], console: Console, top: int) -> None:
    for key in ("ops", "kernels"):
        table = Table(title=f"{key}: per step, A -> B")
        for column in ("name", "count A", "count B", "us A", "us B", "status"):
            table.add_column(column, justify="left" if column == "name" else "right", overflow="fold")
        for row in data[key][:top]:
            table.add_row(cell(row["name"], limit=70), f"{row['count_per_step_a']:.1f}", f"{row['count_per_step_b']:.1f}",
                          f"{row['us_per_step_a']:.1f}", f"{row['us_per_step_b']:.1f}", row["status"])  # fmt: skip
        console.print(table)
