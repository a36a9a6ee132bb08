"""`torchdoctor compile [OPTIONS] -- SCRIPT [ARGS...]`: what torch.compile did, and whether it paid off."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from torchdoctor.store import DEFAULT_STORE

_CONTEXT = {"allow_extra_args": True, "ignore_unknown_options": True}


def register(app: typer.Typer) -> None:
    app.command("compile", context_settings=_CONTEXT)(compile_command)


def compile_command(
    command: Optional[list[str]] = typer.Argument(None, help="SCRIPT [ARGS...], after `--`."),
    warmup_steps: int = typer.Option(5, min=0, max=1_000_000, help="Steps run before measuring (compilation happens here)."),
    steps: int = typer.Option(20, "--steps", min=1, max=1_000_000, help="Steps in the timing window."),
    profile: bool = typer.Option(True, "--profile/--no-profile", help="Profile both runs to diff operators."),
    timeout: Optional[float] = typer.Option(None, help="Stop each run after this many seconds."),
    json_out: Optional[Path] = typer.Option(None, "--json", help="Write the result as JSON here."),
    store: Path = typer.Option(DEFAULT_STORE, "--store", help="SQLite file where runs are kept."),
    save: bool = typer.Option(True, "--save/--no-save", help="Keep the runs in the store."),
    modes: Optional[str] = typer.Option(None, "--modes", help="Compare these torch.compile modes against eager, "
                                        "e.g. default,reduce-overhead,max-autotune (default: default)."),
    dynamic: bool = typer.Option(False, "--dynamic", help="Try each mode with dynamic=False and dynamic=True."),
    backend: str = typer.Option("inductor", "--backend", help="Backend of the modes torchdoctor compiles "
                                "(eager: Dynamo only, no code generation)."),
    rounds: int = typer.Option(3, "--rounds", min=1, help="Runs of eager and of each compiled variant, in "
                               "alternating order; a verdict needs the runs of each side to agree, or (from "
                               "3) every compiled run to beat every eager run or lose to it."),
) -> None:
    """Run SCRIPT as written and compare it with eager (its own torch.compile disabled) or, when it does
    not compile, with torch.compile applied by torchdoctor in each mode; report graphs, breaks,
    recompiles, compile time and speed."""
    import orjson
    from rich.console import Console

    from torchdoctor.compile.comparison import Comparison
    from torchdoctor.compile.modes import parse_modes
    from torchdoctor.compile.report import CompileReport
    from torchdoctor.jsonfields import readable
    from torchdoctor.finding import Finding
    from torchdoctor.report.compile import render_comparison, render_compile, render_modes
    from torchdoctor.report.console_findings import print_findings
    from torchdoctor.report.safe_text import markup
    from torchdoctor.workflow.compile import CompilePlan, compile_script
    from torchdoctor.workflow.observation import ObserveRequest
    from torchdoctor.launch import LaunchConfig, ObserveConfig

    if not command:
        raise typer.BadParameter("give a script after `--`", param_hint="SCRIPT")
    try:
        config = ObserveConfig(warmup_steps=warmup_steps, timing_steps=steps, profile=profile,
                               profile_warmup=1, profile_active=2, memory=False, threads_probe=False)  # fmt: skip
        launch = LaunchConfig(timeout_s=timeout)
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from None
    request = ObserveRequest(command[0], command[1:], config, launch, store)
    plan = CompilePlan(modes=parse_modes(modes) if modes else None, dynamic=dynamic, backend=backend, rounds=rounds)
    result, records = compile_script(request, plan, save=save)
    if json_out:
        json_out.write_bytes(orjson.dumps(result, option=orjson.OPT_INDENT_2, default=str))
    console = Console()
    if records[0].exit.reason != "completed":
        console.print(f"[yellow]{markup(records[0].exit.message)}[/yellow]")
    render_compile(readable(CompileReport.from_dict, result["compile"]), console)
    render_modes(result["modes"], console)
    comparison = readable(Comparison.from_dict, result["comparison"])
    if comparison is not None:
        render_comparison(comparison, console)
    print_findings([Finding.from_dict(a) for a in result["advice"]], console)
