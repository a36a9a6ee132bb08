"""`torchdoctor diagnose [OPTIONS] -- SCRIPT [ARGS...]`: observe a script, store and show its Record."""

from __future__ import annotations

import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

import typer

from torchdoctor.store import DEFAULT_STORE

if TYPE_CHECKING:
    from torchdoctor.record import Record
    from torchdoctor.workflow import DiagnoseOutputs

_CONTEXT = {"allow_extra_args": True, "ignore_unknown_options": True}


def register(app: typer.Typer) -> None:
    app.command("diagnose", context_settings=_CONTEXT)(diagnose)


def diagnose(
    command: Optional[list[str]] = typer.Argument(None, help="SCRIPT [ARGS...], after `--`."),
    demo: bool = typer.Option(False, "--demo", help="Diagnose the built-in demo workload."),
    trace: Optional[list[Path]] = typer.Option(
        None, "--trace", help="Diagnose these profiler trace files, directories or globs (repeatable); runs nothing."),
    jobs: Optional[int] = typer.Option(
        None, "--jobs", min=1, help="With --trace: worker processes analysing ranks at once (default: physical cores)."),
    cluster: Optional[str] = typer.Option(
        None, "--cluster", help="With --trace: run the ranks on this Dask scheduler (tcp://host:8786), or `local`."),
    select: Optional[list[str]] = typer.Option(None, "--select", help="Only these rules (id, prefix or layer)."),
    ignore: Optional[list[str]] = typer.Option(None, "--ignore", help="Skip these rules (id, prefix or layer)."),
    warmup_steps: int = typer.Option(5, min=0, max=1_000_000, help="Steps run before measuring."),
    steps: int = typer.Option(20, "--steps", min=1, max=1_000_000, help="Steps in the timing window."),
    profile: bool = typer.Option(True, "--profile/--no-profile", help="Run a torch.profiler window."),
    profile_wait: int = typer.Option(1, min=0, max=1_000_000, help="Profiler schedule: wait steps."),
    profile_warmup: int = typer.Option(1, min=0, max=1_000_000, help="Profiler schedule: warm-up steps."),
    profile_active: int = typer.Option(3, min=1, max=1_000_000, help="Profiler schedule: recorded steps."),
    record_shapes: bool = typer.Option(False, help="Record operator input shapes in the trace."),
    memory: bool = typer.Option(True, "--memory/--no-memory", help="Measure one step's memory breakdown."),
    compile_probe: bool = typer.Option(
        True, "--compile-probe/--no-compile-probe",
        help="On a CPU run of many small operators, time a few steps with the model compiled (costs the compiling)."),
    nproc_per_node: Optional[int] = typer.Option(None, help="Launch this many ranks with torchrun."),
    torchrun_arg: Optional[list[str]] = typer.Option(
        None, "--torchrun-arg", help="Pass an option to torchrun, e.g. --torchrun-arg=--nnodes=2 (repeatable)."),
    rdzv_timeout: Optional[float] = typer.Option(
        None, help="Give up when the other nodes have not joined torchrun's rendezvous after this many seconds."),
    timeout: Optional[float] = typer.Option(
        None, help="Stop the script after this many seconds (exit reason `timeout`, status 124)."),
    json_out: Optional[Path] = typer.Option(None, "--json", help="Write the Record as JSON here."),
    html_out: Optional[Path] = typer.Option(None, "--html", help="Write a self-contained HTML report here."),
    store: Path = typer.Option(DEFAULT_STORE, "--store", help="SQLite file where runs are kept."),
    save: bool = typer.Option(True, "--save/--no-save", help="Keep the run in the store."),
) -> None:
    """Run SCRIPT unmodified under observation and report where each step's time goes."""
    from torchdoctor.launch.stops import held_stops
    from torchdoctor.trace.pool import default_jobs
    from torchdoctor.workflow import DiagnoseOutputs

    outputs = DiagnoseOutputs(store_path=store, save=save, json_out=json_out, html_out=html_out,
                              select=tuple(select or ()), ignore=tuple(ignore or ()))
    config_options = dict(
        warmup_steps=warmup_steps, timing_steps=steps, profile=profile, profile_wait=profile_wait,
        profile_warmup=profile_warmup, profile_active=profile_active, record_shapes=record_shapes, memory=memory,
        compile_probe=compile_probe,
    )
    if trace:
        traces = [*trace, *(Path(c) for c in command or ())]  # `--trace a.json b.json` gives b as an argument
        sys.exit(_diagnose_traces(traces, outputs, jobs or default_jobs(), cluster))
    # Stops are passed on to the script while it runs and held while the Record is saved: a second
    # Ctrl-C must not cost the store entry or the --json of a run that was measured.
    with held_stops() as stops:
        launch_options = dict(nproc_per_node=nproc_per_node, timeout_s=timeout,
                              torchrun_args=torchrun_args(torchrun_arg, rdzv_timeout))
        record = _diagnose_script(command, demo, config_options, launch_options, outputs)
    sys.exit(stops.exit_status(record.exit.status))


def _diagnose_traces(traces: list[Path], outputs: DiagnoseOutputs, jobs: int, cluster: str | None) -> int:
    """Diagnose trace files (`jobs` worker processes, or the Dask cluster `cluster`); the exit
    status. Nothing is measured, so nothing is held: Ctrl-C and SIGTERM end it at once (130, 143),
    even in the middle of reading a large trace."""
    from torchdoctor.workflow import diagnose_traces

    try:
        return diagnose_traces(traces, outputs, jobs=jobs, cluster=cluster).exit.status
    except KeyboardInterrupt:
        sys.stderr.write("torchdoctor: interrupted; nothing was measured, nothing is lost\n")
        return 128 + signal.SIGINT


def torchrun_args(passed: list[str] | None, rdzv_timeout: float | None) -> list[str]:
    """The options passed to torchrun: those given, and the rendezvous's join timeout."""
    args = list(passed or [])
    if rdzv_timeout is not None:
        args.append(f"--rdzv-conf=join_timeout={int(rdzv_timeout)}")
    return args


def _diagnose_script(
    command: list[str] | None, demo: bool, options: dict[str, Any], launch_options: dict[str, Any],
    outputs: DiagnoseOutputs,
) -> Record:
    """Observe the script (or the demo) and diagnose it; bad options are usage errors."""
    from torchdoctor.launch import LaunchConfig, ObserveConfig
    from torchdoctor.workflow import diagnose_script
    from torchdoctor.zoo import demo_script

    if demo:
        script, args = str(demo_script()), []
    elif command:
        script, args = command[0], command[1:]
    else:
        raise typer.BadParameter("give a script after `--` (or --demo)", param_hint="SCRIPT")
    try:
        config = ObserveConfig(**options)
        launch = LaunchConfig(**launch_options)
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from None
    return diagnose_script(script, args, config, launch, outputs)
