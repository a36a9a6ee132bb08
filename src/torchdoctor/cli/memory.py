"""`torchdoctor memory [OPTIONS] -- SCRIPT [ARGS...]`: where one training step's memory goes."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

import typer

from torchdoctor.store import DEFAULT_STORE

_CONTEXT = {"allow_extra_args": True, "ignore_unknown_options": True}


def register(app: typer.Typer) -> None:
    app.command("memory", context_settings=_CONTEXT)(memory)


def memory(
    command: Optional[list[str]] = typer.Argument(None, help="SCRIPT [ARGS...], after `--`."),
    warmup_steps: int = typer.Option(3, min=0, max=1_000_000, help="Steps run before the measured step."),
    memory_budget: Optional[str] = typer.Option(None, "--memory-budget", help="Device memory, e.g. 16GiB: "
                                                "estimate the largest batch that fits."),
    snapshot: Optional[Path] = typer.Option(None, "--snapshot", help="CUDA: write a memory-history snapshot here."),
    timeout: Optional[float] = typer.Option(None, help="Stop the script after this many seconds."),
    json_out: Optional[Path] = typer.Option(None, "--json", help="Write the Record as JSON here."),
    store: Path = typer.Option(DEFAULT_STORE, "--store", help="SQLite file where runs are kept."),
    save: bool = typer.Option(True, "--save/--no-save", help="Keep the run in the store."),
) -> None:
    """Run SCRIPT unmodified and break one step's peak memory into categories and modules."""
    from rich.console import Console

    from torchdoctor.jsonfields import readable
    from torchdoctor.memory.report import MemoryReport
    from torchdoctor.report.memory import render_memory
    from torchdoctor.report.safe_text import markup
    from torchdoctor.workflow.memory import memory_config, observe_memory
    from torchdoctor.memory.whatif import parse_bytes
    from torchdoctor.launch import LaunchConfig

    if not command:
        raise typer.BadParameter("give a script after `--`", param_hint="SCRIPT")
    budget = parse_bytes(memory_budget) if memory_budget else None
    try:
        config = memory_config(warmup_steps=warmup_steps, budget_bytes=budget, snapshot=snapshot)
        launch = LaunchConfig(timeout_s=timeout)
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from None
    record = observe_memory(command[0], command[1:], config, launch, store_path=store, save=save)
    if json_out:
        record.save(json_out)
    console = Console()
    if record.exit.reason != "completed":
        console.print(f"[yellow]{markup(record.exit.message)}[/yellow]")
    render_memory(readable(MemoryReport.from_dict, record.memory), console)
    sys.exit(record.exit.status)
