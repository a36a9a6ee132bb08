"""`torchdoctor diagnose`: observe a script (or read traces) -> analyse -> diagnose -> store -> render."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from rich.console import Console

from torchdoctor.analyse import accounting_section, analyse_record, explained_section, qualify_findings, record_caveats
from torchdoctor.launch import LaunchConfig, ObserveConfig, observe
from torchdoctor.launch.run import external_rank, shared_run_id
from torchdoctor.record import Record, new_run_id
from torchdoctor.rules import diagnose_record
from torchdoctor.report.base import write_report
from torchdoctor.report.console import render_record
from torchdoctor.report.safe_text import markup
from torchdoctor.store import DEFAULT_STORE, run_dir_for
from torchdoctor.errors import StoreError
from torchdoctor.outputs import OutputError
from torchdoctor.workflow.observation import ObserveRequest, observe_with_progress, try_store


@dataclass(frozen=True, kw_only=True)
class DiagnoseOutputs:
    """Where a diagnosis goes (the store unless `save` is off, a JSON and an HTML file, the
    console) and which rules it runs (`select`/`ignore`: rule ids or prefixes)."""

    store_path: Path = DEFAULT_STORE
    save: bool = True
    json_out: Path | None = None
    html_out: Path | None = None
    console: Console | None = None
    select: Sequence[str] = ()
    ignore: Sequence[str] = ()


def diagnose_script(script: str, args: Sequence[str], config: ObserveConfig, launch: LaunchConfig,
                    outputs: DiagnoseOutputs = DiagnoseOutputs()) -> Record:
    """Observe SCRIPT, keep the Record, and print the report; returns the Record."""
    rank = external_rank()
    run_id = shared_run_id() if rank is not None else new_run_id()
    if rank:  # another rank of the user's own torchrun job: observe, rank 0 reports for all
        return observe(script, args, config, launch, out_dir=run_dir_for(outputs.store_path, run_id), run_id=run_id)
    request = ObserveRequest(script, args, config, launch, outputs.store_path)
    record = observe_with_progress(request, run_id=run_id, save=outputs.save)
    return diagnose_and_report(analyse_record(record), outputs)


def diagnose_traces(traces: Sequence[Path], outputs: DiagnoseOutputs = DiagnoseOutputs(), jobs: int = 1,
                    cluster: str | None = None) -> Record:
    """Diagnose from profiler trace files alone (nothing is run): a Record of kind "traces".
    `traces`: files, directories or glob patterns (trace/files.py), analysed `jobs` at a time, or
    on the Dask cluster at `cluster` (trace/cluster.py)."""
    from torchdoctor.report.progress import ranks_progress
    from torchdoctor.trace import analyse_traces
    from torchdoctor.trace.files import trace_files

    files = trace_files(traces)
    record = Record(kind="traces", artifacts={"traces": [str(t) for t in files]})
    with ranks_progress() as progress:
        record.trace = analyse_traces([str(t) for t in files], progress=progress, jobs=jobs, cluster=cluster).to_dict()
    record.accounting = accounting_section(record)
    return diagnose_and_report(record, outputs)


def diagnose_and_report(record: Record, outputs: DiagnoseOutputs) -> Record:
    """The stages after analysis: findings, the store, the JSON and HTML files, the terminal report.
    A store that cannot be written does not stop the others: its StoreError is raised after them."""
    console = outputs.console or Console()
    findings = diagnose_record(record, select=outputs.select, ignore=outputs.ignore)
    record.caveats = record_caveats(record)
    record.findings = qualify_findings(findings, record.caveats)
    record.accounting = explained_section(record.accounting, record.findings)
    store_error = try_store(outputs.store_path, [record]) if outputs.save else None
    render_record(record, console)
    written, failed = write_outputs(record, outputs)
    if store_error is not None:
        error = StoreError("; ".join([f"{store_error}", *failed,
                                      f"{', '.join(['the report above', *written])} still written"]))
        error.exit_code = record.exit.status or StoreError.exit_code
        raise error
    if outputs.save:
        console.print(f"[dim]stored as {markup(record.run_id)}; show it again with "
                      f"`torchdoctor runs show {markup(record.run_id)}`[/dim]")
    if failed:
        error = OutputError("; ".join(failed))
        error.exit_code = record.exit.status or OutputError.exit_code
        raise error
    return record


def write_outputs(record: Record, outputs: DiagnoseOutputs) -> tuple[list[str], list[str]]:
    """Write --json and --html, each whole or not at all: the options written, and why the others
    were not (one failed output does not stop the next)."""
    written, failed = [], []
    for option, path, write in (("--json", outputs.json_out, lambda p: record.save(p, what="--json")),
                                ("--html", outputs.html_out, lambda p: write_report(record, p, "html", what="--html"))):
        if path is None:
            continue
        try:
            write(path)
            written.append(option)
        except OutputError as exc:
            failed.append(str(exc))
    return written, failed
