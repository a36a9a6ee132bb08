"""Terminal rendering of `record.memory` (torchdoctor.memory's MemoryReport).

Module names come from the user's model and the device and notes from the Record: they are
printed through report/safe_text.py.
"""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from torchdoctor.memory.breakdown import MemoryBreakdown
from torchdoctor.memory.report import MemoryReport
from torchdoctor.memory.whatif import WhatIf
from torchdoctor.report.format import fmt_bytes, fmt_phase, fmt_step
from torchdoctor.report.safe_text import cell, markup


def _categories(b: MemoryBreakdown) -> Table:
    peak = b.peak_bytes or 0
    where = markup(fmt_phase(b.phase) or "during ?")
    table = Table(title=f"peak {fmt_bytes(peak)} on {markup(b.device)}, {where}")
    for column in ("category", "bytes", "share of peak"):
        table.add_column(column, justify="left" if column == "category" else "right", overflow="fold")
    for name, value in b.categories_bytes.items():
        if value:
            table.add_row(cell(name.replace("_", " ")), fmt_bytes(value), f"{value / peak:.1%}" if peak else "-")
    return table


def _modules(b: MemoryBreakdown) -> Table:
    table = Table(title="top-level modules")
    for column in ("module", "parameters", "kept for backward", "output", "peak in forward", "peak in backward"):
        table.add_column(column, justify="left" if column == "module" else "right", overflow="fold")
    for m in b.modules:
        table.add_row(cell(m.name), fmt_bytes(m.parameter_bytes), fmt_bytes(m.activation_bytes),
                      fmt_bytes(m.output_bytes), fmt_bytes(m.peak_forward_bytes),
                      fmt_bytes(m.peak_backward_bytes))  # fmt: skip
    return table


def _what_if(w: WhatIf) -> list[str]:
    lines = []
    if w.checkpointing_peak_bytes is not None:
        lines.append(f"activation checkpointing of repeated blocks: ~{fmt_bytes(w.checkpointing_peak_bytes)}")
    if w.autocast_bf16_peak_bytes is not None:
        lines.append(f"bf16 autocast: ~{fmt_bytes(w.autocast_bf16_peak_bytes)}")
    if w.per_sample_bytes:
        lines.append(f"each sample of the batch adds ~{fmt_bytes(w.per_sample_bytes)}")
    if w.largest_batch_in_budget is not None:
        lines.append(f"largest batch within {fmt_bytes(w.budget_bytes)}: ~{markup(w.largest_batch_in_budget)}")
    return lines


def render_memory(memory: MemoryReport | None, console: Console) -> None:
    if memory is None or memory.breakdown is None:
        console.print("[yellow]no memory measurement: the script did not reach the memory window[/yellow]")
        return
    b = memory.breakdown
    console.print(f"measured step: {markup(fmt_step(memory.measured_step))}")
    if b.reason:
        console.print(f"[yellow]note:[/yellow] {markup(b.reason)}")
    if b.categories_bytes:
        console.print(_categories(b))
        if b.modules:
            console.print(_modules(b))
    else:
        console.print(f"peak {fmt_bytes(b.peak_bytes)} ({markup(b.method)}; no categories)")
    if b.allocator:
        a = b.allocator
        console.print(f"CUDA allocator: allocated {fmt_bytes(a.allocated_bytes)}, reserved "
                      f"{fmt_bytes(a.reserved_bytes)}, peak {fmt_bytes(a.peak_allocated_bytes)}, "
                      f"fragmentation {a.fragmentation or 0.0:.1%}")  # fmt: skip
    lines = _what_if(memory.what_if) if memory.what_if else []
    if lines:
        console.print("[bold]estimated peak with[/bold]\n  " + markup("\n  ".join(lines)))
    if memory.snapshot:
        console.print(f"memory snapshot: {markup(memory.snapshot)} (analyse it with torchdoctor.memory.snapshot)")
    elif memory.snapshot_note:
        console.print(f"[yellow]no snapshot:[/yellow] {markup(memory.snapshot_note)}")
