"""`torchdoctor trace analyze|diff`: the trace engine from the command line (thin: calls the library)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from torchdoctor.outputs import dumps_json, write_atomic

app = typer.Typer(help="Analyse PyTorch profiler (Kineto) traces: CPU or GPU, one rank or many.", no_args_is_help=True)


def _parse_steps(text: str | None) -> tuple[int, int] | None:
    if not text:
        return None
    first, _, last = text.partition("-")
    try:
        span = int(first), int(last or first)
    except ValueError:
        span = None
    if span is None or not 0 <= span[0] <= span[1] < 2**63:
        raise typer.BadParameter(f"--steps takes N or FIRST-LAST (profiler step numbers, FIRST <= LAST), "
                                 f"not {text!r}")
    return span


@app.command()
def analyze(
    traces: list[Path] = typer.Argument(
        ..., help="Trace files (.json or .json.gz), one per rank, directories of them, or glob patterns."),
    json_path: Optional[Path] = typer.Option(None, "--json", help="Also write the report as JSON here."),
    steps: Optional[str] = typer.Option(None, "--steps", help="Profiler steps to analyse: N or FIRST-LAST."),
    top: int = typer.Option(15, "--top", min=1, max=10_000, help="How many operators and kernels to list."),
    jobs: Optional[int] = typer.Option(
        None, "--jobs", min=1, help="Worker processes analysing ranks at once (default: the physical cores)."),
    cluster: Optional[str] = typer.Option(
        None, "--cluster", help="Run the ranks on this Dask scheduler (tcp://host:8786), or `local`."),
) -> None:
    """Per-step and overall figures: host operators, device time, launches, idle, ranks."""
    import orjson
    from rich.console import Console

    from torchdoctor.trace import TraceConfig, analyse_traces
    from torchdoctor.trace.files import trace_files
    from torchdoctor.trace.pool import default_jobs
    from torchdoctor.trace.summary.rank import RankSummary
    from torchdoctor.trace.summary.trace_summary import TraceSummary
    from torchdoctor.report.progress import ranks_progress
    from torchdoctor.report.trace import render_report

    config = TraceConfig(top_n=top, steps=_parse_steps(steps))
    files = trace_files(traces)
    if not files:
        raise typer.BadParameter("no trace file (.json, .json.gz) in the directories or patterns given")
    with ranks_progress() as progress:
        report = analyse_traces(files, config, progress=progress, jobs=jobs or default_jobs(), cluster=cluster)
    # Rank by rank: the ranks' sections are never all expanded at once (docs/trace.md, "All cores").
    render_report(TraceSummary.from_dict(report.head()), Console(),
                  (RankSummary.from_dict(section) for section in report.iter_ranks()))
    if json_path is not None:
        option = orjson.OPT_INDENT_2 | orjson.OPT_SERIALIZE_NUMPY
        try:
            write_atomic(json_path, report.json_chunks(option), what="--json")
        except orjson.JSONEncodeError:  # a value orjson cannot encode as is (a file name's odd bytes)
            write_atomic(json_path, dumps_json(report.to_dict(), option=option), what="--json")


@app.command()
def diff(
    a: Path = typer.Argument(..., help="Baseline trace."),
    b: Path = typer.Argument(..., help="Trace to compare (e.g. with torch.compile)."),
    json_path: Optional[Path] = typer.Option(None, "--json", help="Also write the diff as JSON here."),
    top: int = typer.Option(20, "--top", min=1, max=10_000, help="Rows to show per table."),
) -> None:
    """Per operator and kernel: count and time per step in A and B, added/removed/faster/slower."""
    import orjson
    from rich.console import Console

    from torchdoctor.trace import diff_traces
    from torchdoctor.report.trace import render_diff

    data = diff_traces(a, b).to_dict()
    render_diff(data, Console(), top)
    if json_path is not None:
        write_atomic(json_path, dumps_json(data, option=orjson.OPT_INDENT_2), what="--json")
