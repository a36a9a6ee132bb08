"""`torchdoctor watch [OPTIONS] -- SCRIPT [ARGS...]`: observe a whole run, to its end, and say where
its wall time went."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

import typer

from torchdoctor.store import DEFAULT_STORE

_CONTEXT = {"allow_extra_args": True, "ignore_unknown_options": True}


def register(app: typer.Typer) -> None:
    app.command("watch", context_settings=_CONTEXT)(watch)


def watch(
    command: Optional[list[str]] = typer.Argument(None, help="SCRIPT [ARGS...], after `--`."),
    duration: Optional[float] = typer.Option(
        None, help="Stop the script after this many seconds and report what was seen."),
    sample_every: float = typer.Option(
        0.05, help="Seconds between two stack samples of the script (names the slow steps' causes)."),
    progress_every: float = typer.Option(
        60.0, help="Seconds between two progress lines on stderr in a pipe or CI log (a terminal: a live panel)."),
    warmup_steps: int = typer.Option(5, help="Steps run before the detailed timing window."),
    steps: int = typer.Option(20, "--steps", help="Steps in the detailed timing window."),
    profile: bool = typer.Option(True, "--profile/--no-profile", help="Run a torch.profiler window at the start."),
    memory: bool = typer.Option(True, "--memory/--no-memory", help="Measure one step's memory breakdown."),
    profile_every: float = typer.Option(
        10.0, help="Minutes between two short profiler windows during the run (a fraction: 0.5 is 30 s)."),
    periodic_profile: bool = typer.Option(
        True, "--periodic-profile/--no-periodic-profile", help="Repeat a short profiler window during the run."),
    nproc_per_node: Optional[int] = typer.Option(
        None, help="Launch this many ranks with torchrun; each streams its own run."),
    torchrun_arg: Optional[list[str]] = typer.Option(
        None, "--torchrun-arg", help="Pass an option to torchrun, e.g. --torchrun-arg=--nnodes=2 (repeatable)."),
    rdzv_timeout: Optional[float] = typer.Option(
        None, help="Give up when the other nodes have not joined torchrun's rendezvous after this many seconds."),
    json_out: Optional[Path] = typer.Option(None, "--json", help="Write the Record as JSON here."),
    html_out: Optional[Path] = typer.Option(None, "--html", help="Write a self-contained HTML report here."),
    store: Path = typer.Option(DEFAULT_STORE, "--store", help="SQLite file where runs are kept."),
    save: bool = typer.Option(True, "--save/--no-save", help="Keep the run in the store."),
) -> None:
    """Run SCRIPT to its end: the detailed windows at the start, then a lean observation of every
    step; report the whole run's goodput and badput, each cause named by the script's own code."""
    from torchdoctor.cli.diagnose import torchrun_args
    from torchdoctor.launch import LaunchConfig, ObserveConfig
    from torchdoctor.launch.stops import held_stops
    from torchdoctor.workflow import DiagnoseOutputs
    from torchdoctor.workflow.watch import watch_script

    if not command:
        raise typer.BadParameter("give a script after `--`", param_hint="SCRIPT")
    try:
        config = ObserveConfig(warmup_steps=warmup_steps, timing_steps=steps, profile=profile, memory=memory,
                               stop_after_windows=False, threads_probe=False, compile_probe=False, watch=True,
                               watch_sample_interval_s=sample_every,
                               watch_profile_every_s=60.0 * profile_every if periodic_profile else 0.0)
        launch = LaunchConfig(timeout_s=duration, nproc_per_node=nproc_per_node,
                              torchrun_args=torchrun_args(torchrun_arg, rdzv_timeout))
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from None
    if progress_every <= 0:
        raise typer.BadParameter("must be > 0", param_hint="--progress-every")
    if profile_every <= 0:
        raise typer.BadParameter("must be > 0 (--no-periodic-profile turns the windows off)",
                                 param_hint="--profile-every")
    outputs = DiagnoseOutputs(store_path=store, save=save, json_out=json_out, html_out=html_out)
    with held_stops() as stops:
        record = watch_script(command[0], command[1:], config, launch, outputs, progress_every_s=progress_every)
    status = 0 if record.exit.reason == "timeout" and duration is not None else record.exit.status
    sys.exit(stops.exit_status(status))
