"""Rich tables of the distributed commands' documents (comm sweep, scaling sweep).

Device names, backends, script paths and messages come from the machine and the user's script:
they are printed through report/safe_text.py.
"""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

from torchdoctor.finding import Finding
from torchdoctor.report.console_findings import print_findings
from torchdoctor.report.format import fmt_bytes
from torchdoctor.report.safe_text import cell, markup


def _findings(doc: dict[str, Any]) -> list[Finding]:
    """The document's findings (as `Finding.to_dict` wrote them)."""
    return [Finding.from_dict(f) for f in doc["findings"]]


def comm_table(op: str, result: dict[str, Any]) -> Table:
    table = Table(title=f"{markup(op)} (bus factor {result['bus_factor']:.3g})", title_justify="left")
    for name in ("size", "count", "time (us)", "algbw (GB/s)", "busbw (GB/s)", "correct"):
        table.add_column(name, justify="right")
    for row in result["rows"]:
        table.add_row(fmt_bytes(row["size_bytes"]), str(row["count"]), f"{row['time_us']:.1f}",
                      f"{row['algbw_gb_per_s']:.4f}", f"{row['busbw_gb_per_s']:.4f}",
                      "yes" if row["correct"] else "[red]NO[/red]")
    return table


def render_comm(doc: dict[str, Any], console: Console) -> None:
    console.print(f"[bold]torchdoctor comm[/bold]: {markup(doc['backend'])}, {markup(doc['world_size'])} ranks, "
                  f"{markup(doc['device_name'] or doc['device'])}, {markup(doc['iters'])} timed calls per size")
    for op, result in doc["collectives"].items():
        if result["supported"]:
            console.print(comm_table(op, result))
        else:
            console.print(f"[yellow]{markup(op)}: unsupported by {markup(doc['backend'])}[/yellow] "
                          f"({markup(result['reason'])})")
    expected = doc["expected_busbw_gb_per_s"]
    known = f"{expected:.0f} GB/s ({markup(doc['expected_source'])})" if expected else "unknown for this backend/device"
    console.print("expected bus bandwidth: " + known)
    print_findings(_findings(doc), console)


def render_scale(doc: dict[str, Any], console: Console) -> None:
    table = Table(title=f"scaling of {markup(doc['script'], one_line=True)}", title_justify="left")
    unit = doc["sizes"][0]["unit"] if doc["sizes"] else "samples/s"
    for name in ("processes", "step (ms)", f"{unit} (all ranks)", "speed-up", "efficiency", "loss mostly in", "status"):
        table.add_column(name, justify="right")
    for row in doc["sizes"]:
        ms = f"{row['step_s'] * 1e3:.1f}" if row["step_s"] else "-"
        rate = f"{row['throughput_per_s']:.1f}" if row["throughput_per_s"] else "-"
        speedup = f"{row['speedup']:.2f}x" if row["speedup"] is not None else "-"
        eff = f"{row['efficiency']:.0%}" if row["efficiency"] is not None else "-"
        table.add_row(str(row["nproc"]), ms, rate, speedup, eff, cell(row.get("layer") or "-"), cell(row["exit_reason"]))
    console.print(table)
    print_findings(_findings(doc), console)
