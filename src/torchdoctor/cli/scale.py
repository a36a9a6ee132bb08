"""`torchdoctor scale -- SCRIPT ARGS`: throughput, speed-up and efficiency at 1, 2, 4 ... processes."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

_CONTEXT = {"allow_extra_args": True, "ignore_unknown_options": True}


def register(app: typer.Typer) -> None:
    app.command("scale", context_settings=_CONTEXT)(scale)


def scale(
    command: list[str] = typer.Argument(..., help="SCRIPT ARGS, after `--`."),
    max_nproc: int = typer.Option(2, "--max-nproc", help="Largest number of processes tried."),
    warmup_steps: int = typer.Option(5, min=0, max=1_000_000, help="Steps before measuring, per size."),
    steps: int = typer.Option(20, min=1, max=1_000_000, help="Timed steps per size."),
    torchrun_arg: Optional[list[str]] = typer.Option(None, "--torchrun-arg",
                                                     help="Extra torchrun option; repeatable."),
    timeout_s: Optional[float] = typer.Option(None, help="Stop each run after this many seconds."),
    json_out: Optional[Path] = typer.Option(None, "--json", help="Write the JSON document here."),
    html_out: Optional[Path] = typer.Option(None, "--html", help="Write the scaling curve as an HTML page here."),
) -> None:
    """Run SCRIPT at 1, 2, 4 ... --max-nproc processes under torchrun and compare throughput."""
    import orjson
    from rich.console import Console
    from rich.progress import Progress

    from torchdoctor.report.distributed import render_scale
    from torchdoctor.distributed.scale import process_counts
    from torchdoctor.workflow.scale import ScaleConfig, scale_script
    from torchdoctor.observe import ObserveConfig

    script, *args = command
    config = ScaleConfig(max_nproc=max_nproc, torchrun_args=list(torchrun_arg or []), timeout_s=timeout_s)
    observe_config = ObserveConfig(warmup_steps=warmup_steps, timing_steps=steps, profile=False, threads_probe=False)
    console = Console()
    with Progress(console=console, transient=True) as progress:
        task = progress.add_task("scaling", total=len(process_counts(max_nproc)))
        doc = scale_script(script, args, observe_config, config,
                           on_size=lambda n: progress.update(task, description=f"{n} processes",
                                                             completed=process_counts(max_nproc).index(n)))
    render_scale(doc, console)
    if json_out:
        json_out.write_bytes(orjson.dumps(doc, option=orjson.OPT_INDENT_2))
    if html_out:
        from torchdoctor.report.distributed_html import scale_html

        html_out.write_text(scale_html(doc), encoding="utf-8")
