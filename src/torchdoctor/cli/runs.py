"""`torchdoctor runs list|show|compare`: the stored runs."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console

from torchdoctor.store import DEFAULT_STORE

app = typer.Typer(help="List, show and compare stored runs.", no_args_is_help=True)

StoreOption = typer.Option(DEFAULT_STORE, "--store", help="SQLite file of stored runs.")


@app.command("list")
def list_runs(
    store: Path = StoreOption,
    limit: int = typer.Option(20, min=1, max=1_000_000, help="Show at most this many runs."),
) -> None:
    """List stored runs, newest first."""
    from torchdoctor.report.runs import runs_table
    from torchdoctor.store import RunStore

    with RunStore(store) as runs:
        Console().print(runs_table(runs.list(limit)))


@app.command("show")
def show(
    run_id: str = typer.Argument(..., help="Run id, a unique prefix of one, or 'last'."),
    store: Path = StoreOption,
    json_out: Path = typer.Option(None, "--json", help="Also write the Record as JSON here."),
    html_out: Path = typer.Option(None, "--html", help="Also write a self-contained HTML report here."),
) -> None:
    """Render a stored run again."""
    from torchdoctor.report.console import render_record
    from torchdoctor.workflow.records import load_stored

    record = load_stored(run_id, store)
    render_record(record, Console())
    if json_out:
        record.save(json_out, what="--json")
    if html_out:
        from torchdoctor.report.base import write_report

        write_report(record, html_out, "html", what="--html")


@app.command("compare")
def compare(
    run_a: str = typer.Argument(..., help="Baseline run id (or prefix)."),
    run_b: str = typer.Argument(..., help="Run id to compare against the baseline."),
    store: Path = StoreOption,
    json_out: Path = typer.Option(None, "--json", help="Write the comparison as JSON here."),
) -> None:
    """Two runs side by side: step-time change with a verdict, and what differs."""
    import orjson

    from torchdoctor.report.runs import render_comparison
    from torchdoctor.workflow.records import compare_stored

    comparison = compare_stored(run_a, run_b, store)
    render_comparison(comparison, Console())
    if json_out:
        from torchdoctor.outputs import dumps_json, write_atomic

        write_atomic(json_out, dumps_json(comparison.to_dict(), option=orjson.OPT_INDENT_2), what="--json")
