"""`torchdoctor report RECORD.json|RUN_ID [--html PATH] [-o PATH [--format F]]`: draw a saved Record again."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from torchdoctor.store import DEFAULT_STORE


def register(app: typer.Typer) -> None:
    app.command("report")(report)


def report(
    source: str = typer.Argument(..., help="A Record JSON file, or a stored run id (a unique prefix, or 'last')."),
    html: Optional[Path] = typer.Option(None, "--html", help="Write the self-contained HTML report here."),
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="Write the report here (format from the extension)."),
    fmt: Optional[str] = typer.Option(None, "--format", help="Format for --output: txt, json or html."),
    store: Path = typer.Option(DEFAULT_STORE, "--store", help="SQLite file of stored runs (for a run id)."),
) -> None:
    """Render a Record from a JSON file or the run store: to the terminal, or to files."""
    from rich.console import Console

    from torchdoctor.report.base import write_report
    from torchdoctor.report.console import render_record
    from torchdoctor.report.safe_text import markup
    from torchdoctor.workflow.records import load_record

    record = load_record(source, store)
    targets = [(path, kind) for path, kind in ((html, "html"), (output, fmt)) if path is not None]
    for path, kind in targets:
        Console(stderr=True).print(f"wrote {markup(write_report(record, path, kind))}", highlight=False)
    if not targets:
        render_record(record, Console())
