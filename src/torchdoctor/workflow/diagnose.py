"""`torchdoctor diagnose`: observe a script (or read traces) -> analyse -> diagnose -> store -> render."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from rich.console import Console

from torchdoctor.analyse import analyse_record
from torchdoctor.observe import LaunchConfig, ObserveConfig, observe
from torchdoctor.observe.run import external_rank, shared_run_id
from torchdoctor.record import Record, new_run_id
from torchdoctor.rules import diagnose_record
from torchdoctor.report.console import render_record
from torchdoctor.store import run_dir_for
from torchdoctor.workflow.observation import observe_with_progress, store_records


def diagnose_script(
    script: str,
    args: Sequence[str],
    config: ObserveConfig,
    launch: LaunchConfig,
    *,
    store_path: Path,
    save: bool = True,
    json_out: Path | None = None,
    console: Console | None = None,
    select: Sequence[str] = (),
    ignore: Sequence[str] = (),
) -> Record:
    """Observe SCRIPT, keep the Record, and print the report; returns the Record."""
    console = console or Console()
    rank = external_rank()
    run_id = shared_run_id() if rank is not None else new_run_id()
    if rank:  # another rank of the user's own torchrun job: observe, rank 0 reports for all
        return observe(script, args, config, launch, out_dir=run_dir_for(store_path, run_id), run_id=run_id)
    record = analyse_record(observe_with_progress(script, args, config, launch, store_path=store_path, run_id=run_id))
    return _diagnose_and_report(record, store_path, save, json_out, console, select, ignore)


def diagnose_traces(
    traces: Sequence[Path],
    *,
    store_path: Path,
    save: bool = True,
    json_out: Path | None = None,
    console: Console | None = None,
    select: Sequence[str] = (),
    ignore: Sequence[str] = (),
) -> Record:
    """Diagnose from profiler trace files alone (nothing is run): a Record of kind "traces"."""
    from torchdoctor.trace import analyse_traces

    console = console or Console()
    record = Record(kind="traces", artifacts={"traces": [str(t) for t in traces]})
    record.trace = analyse_traces([str(t) for t in traces]).to_dict()
    return _diagnose_and_report(record, store_path, save, json_out, console, select, ignore)


def _diagnose_and_report(
    record: Record, store_path: Path, save: bool, json_out: Path | None, console: Console,
    select: Sequence[str], ignore: Sequence[str],
) -> Record:
    """The stages after analysis: findings, the store, the JSON file, the terminal report."""
    record.findings = [f.to_dict() for f in diagnose_record(record, select=select, ignore=ignore)]
    if save:
        store_records(store_path, [record])
    if json_out:
        record.save(json_out)
    render_record(record, console)
    if save:
        console.print(f"[dim]stored as {record.run_id}; show it again with "
                      f"`torchdoctor runs show {record.run_id}`[/dim]")
    return record
