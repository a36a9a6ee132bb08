"""`torchdoctor tune [OPTIONS] -- SCRIPT [ARGS...]` and `torchdoctor run --apply RESULT.json -- SCRIPT`."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

import typer

from torchdoctor.store import DEFAULT_STORE

_CONTEXT = {"allow_extra_args": True, "ignore_unknown_options": True}


def register(app: typer.Typer) -> None:
    app.command("tune", context_settings=_CONTEXT)(tune)
    app.command("run", context_settings=_CONTEXT)(run)


def _script_and_args(command: Optional[list[str]], demo: bool) -> tuple[str, list[str]]:
    from torchdoctor.zoo import demo_script

    if demo:
        return str(demo_script()), []
    if command:
        return command[0], command[1:]
    raise typer.BadParameter("give a script after `--` (or --demo)", param_hint="SCRIPT")


def tune(
    command: Optional[list[str]] = typer.Argument(None, help="SCRIPT [ARGS...], after `--`."),
    demo: bool = typer.Option(False, "--demo", help="Tune the built-in demo workload."),
    max_trials: int = typer.Option(20, help="Trials after the baseline, at most."),
    time_budget: Optional[float] = typer.Option(None, help="Stop starting trials after this many seconds (default: 1200)."),
    trial_timeout: float = typer.Option(300.0, help="A trial running longer is stopped and marked failed."),
    warmup_steps: int = typer.Option(5, help="Steps each trial runs before timing."),
    steps: int = typer.Option(30, "--steps", help="Timed steps per trial."),
    knobs: Optional[str] = typer.Option(None, help="Comma-separated knob names to try (default: all that apply)."),
    max_memory_growth: float = typer.Option(
        0.10, help="Do not keep a knob that raises the step's peak memory by more than this share (0.1: 10%)."),
    int_trials: int = typer.Option(3, help="Optuna trials per integer knob."),
    allow_batch_size: bool = typer.Option(False, "--allow-batch-size", help="Also tune the batch size."),
    repeat_baseline: bool = typer.Option(True, help="Run the baseline twice to measure the script's run-to-run noise."),
    rounds: int = typer.Option(2, help="Rounds per knob value: best and candidate interleaved A B B A."),
    confirm_rounds: int = typer.Option(3, help="Rounds of the final confirmation (baseline vs best, interleaved), "
                                       "at least."),
    confirm_max_rounds: Optional[int] = typer.Option(
        None, help="Rounds of the confirmation at most: more are run while the speed-up is less precise than "
                   "--confirm-precision or its runs span less than --confirm-span (default: 12, or --confirm-rounds "
                   "when larger)."),
    confirm_precision: float = typer.Option(
        0.05, help="Relative half-width of the speed-up's 95% uncertainty the confirmation aims for."),
    confirm_window: float = typer.Option(
        1.0, help="Seconds of steps each confirmation run times at least: short steps get more than --steps "
                  "(up to 5000), so that a one-off pause weighs little; 0: --steps."),
    confirm_span: float = typer.Option(
        60.0, help="Seconds the confirmation's runs last at least, in all: on a shared machine a speed-up measured "
                   "within half a minute may not hold the next; 0: no span asked."),
    seed: int = typer.Option(0, help="Seed Python, NumPy and torch before the script runs (it may seed itself)."),
    no_seed: bool = typer.Option(False, "--no-seed", help="Do not seed the script."),
    accept_unchecked_numerics: bool = typer.Option(
        False, "--accept-unchecked-numerics", help="Keep precision/compile knobs whose numerics cannot be checked."),
    nproc_per_node: Optional[int] = typer.Option(None, help="Run every trial with this many ranks under torchrun."),
    torchrun_arg: Optional[list[str]] = typer.Option(None, "--torchrun-arg", help="Extra torchrun option; repeatable."),
    json_out: Optional[Path] = typer.Option(None, "--json", help="Write the tuning result as JSON here."),
    store: Path = typer.Option(DEFAULT_STORE, "--store", help="SQLite file where trials are kept."),
) -> None:
    """Apply fixes to the unmodified script one at a time; keep those that are faster and still correct."""
    from torchdoctor.launch.run import check_script
    from torchdoctor.tune import TuneConfig
    from torchdoctor.workflow.tune import tune_script

    script, args = _script_and_args(command, demo)
    check_script(script)
    try:
        config = TuneConfig(warmup_steps=warmup_steps, timing_steps=steps, max_trials=max_trials,
                            time_budget_s=time_budget, trial_timeout_s=trial_timeout, int_trials=int_trials,
                            max_memory_growth=max_memory_growth,
                            allow_batch_size=allow_batch_size, repeat_baseline=repeat_baseline,
                            nproc_per_node=nproc_per_node,
                            rounds=rounds, max_rounds=max(4, rounds), confirm_rounds=confirm_rounds,
                            confirm_max_rounds=max(confirm_rounds, 12) if confirm_max_rounds is None
                            else confirm_max_rounds, confirm_precision=confirm_precision,
                            confirm_window_s=confirm_window, confirm_span_s=confirm_span,
                            script_seed=None if no_seed else seed, accept_unchecked_numerics=accept_unchecked_numerics,
                            torchrun_args=list(torchrun_arg or []), only=[k for k in (knobs or "").split(",") if k])
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from None
    result = tune_script(script, args, config, store_path=store, json_out=json_out)
    sys.exit(result.exit_status)


def run(
    command: Optional[list[str]] = typer.Argument(None, help="SCRIPT [ARGS...], after `--`."),
    apply: Path = typer.Option(..., "--apply", help="A `torchdoctor tune --json` result whose kept knobs to apply."),
    force: bool = typer.Option(False, "--force", help="Apply the result even if it was made for another script."),
) -> None:
    """Run SCRIPT with the knobs a tuning session kept, without editing the script."""
    from torchdoctor.launch.run import check_script
    from torchdoctor.workflow.tune import run_applied

    script, args = _script_and_args(command, False)
    check_script(script)
    sys.exit(run_applied(script, args, apply, force=force))
