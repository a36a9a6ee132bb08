"""`torchdoctor check [OPTIONS] -- SCRIPT [ARGS...]`: a performance gate for CI.

One mode per invocation:
  torchdoctor check --against REF -- train.py ...           working tree vs a git ref, interleaved
  torchdoctor check --against-python PATH -- train.py ...   this interpreter vs another one
  torchdoctor check --save-baseline NAME -- train.py ...    record a baseline (store, or NAME.json)
  torchdoctor check --baseline NAME -- train.py ...         against a recorded baseline (same machine type)
  torchdoctor check --demo                                  a caught regression on the built-in demo
Exit status: 0 no regression (or baseline saved), 1 regression, 2 undecided or error.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

import typer

from torchdoctor.errors import TorchDoctorError
from torchdoctor.store import DEFAULT_STORE

_CONTEXT = {"allow_extra_args": True, "ignore_unknown_options": True}


def register(app: typer.Typer) -> None:
    app.command("check", context_settings=_CONTEXT)(check)


def fraction(text: str) -> float:
    """'5%' or '0.05' -> 0.05."""
    text = text.strip()
    try:
        return float(text[:-1]) / 100.0 if text.endswith("%") else float(text)
    except ValueError:
        raise typer.BadParameter(f"give a fraction (0.05) or a percentage (5%), not {text!r}") from None


#: --demo's windows when none are given: short, so the demo ends in about a minute on a quiet machine.
DEMO_WINDOWS = {"warmup_steps": 2, "steps": 6}


def check(
    ctx: typer.Context,
    command: Optional[list[str]] = typer.Argument(None, help="SCRIPT [ARGS...], after `--`."),
    against: Optional[str] = typer.Option(None, "--against", help="Compare with this git ref (branch, tag, commit)."),
    against_python: Optional[str] = typer.Option(
        None, "--against-python", help="Compare with this Python interpreter (another environment), same code."),
    baseline: Optional[str] = typer.Option(
        None, "--baseline", help="Compare with a saved baseline: a name in the store, or a .json file."),
    save_baseline: Optional[str] = typer.Option(
        None, "--save-baseline", help="Measure and save a baseline under this name (or .json file); no comparison."),
    demo: bool = typer.Option(False, "--demo", help="Show a caught regression on the built-in demo."),
    max_slowdown: str = typer.Option("5%", help="Fail (exit 1) on a step-time slowdown beyond this."),
    max_memory_growth: str = typer.Option("10%", help="Fail (exit 1) on a peak-memory growth beyond this."),
    budget: float = typer.Option(300.0, "--budget", help="Seconds allowed to decide; exit 2 when undecided by then."),
    warmup_steps: int = typer.Option(3, min=0, max=1_000_000, help="Steps each observation runs before timing."),
    steps: int = typer.Option(10, "--steps", min=1, max=1_000_000, help="Timed steps per observation (one sample = their median)."),
    timed_window: float = typer.Option(
        0.5, "--timed-window", help="Seconds each observation times at least: more than --steps steps when they are "
        "short (at most 10x); 0: exactly --steps."),
    min_rounds: int = typer.Option(5, help="Rounds before the first look."),
    max_rounds: int = typer.Option(
        400, help="Most rounds; the rounds planned are as many as the budget holds at the pilot's pace."),
    min_effect: str = typer.Option("2%", help="Smallest effect ever claimed (the noise floor's least value)."),
    confidence: float = typer.Option(0.95, help="Confidence of the decision, over all looks."),
    aa: bool = typer.Option(True, "--aa/--no-aa", help="Observe A twice per round (A-vs-A control: the noise floor)."),
    seed: int = typer.Option(0, help="Seed of the round order and the bootstrap."),
    timeout: float = typer.Option(600.0, "--timeout", help="Seconds one observation may take."),
    memory: bool = typer.Option(True, "--memory/--no-memory", help="Measure and gate the step's peak memory."),
    locate: bool = typer.Option(True, "--locate/--no-locate", help="On a regression, profile both sides and diff."),
    fork_server: bool = typer.Option(
        True, "--fork-server/--no-fork-server", help="Fork observations from a server that imported torch once."),
    same_cwd: bool = typer.Option(
        False, "--same-cwd", help="Run REF's side in this folder too (untracked data), not in its own tree."),
    json_out: Optional[str] = typer.Option(None, "--json", help="Write the result as JSON here ('-': stdout)."),
    markdown_out: Optional[Path] = typer.Option(None, "--markdown", help="Write a Markdown summary here."),
    junit_out: Optional[Path] = typer.Option(None, "--junit", help="Write JUnit XML here."),
    annotations: bool = typer.Option(False, "--annotations", help="Print GitHub workflow annotations on stdout."),
    store: Path = typer.Option(DEFAULT_STORE, "--store", help="SQLite store (named baselines; artefacts beside it)."),
) -> None:
    """Fail CI on a slowdown: compare the step time (and memory) of SCRIPT with a git ref, another
    interpreter or a saved baseline, interleaved on this machine, with a CI and a noise floor."""
    from torchdoctor.bench import Policy
    from torchdoctor.workflow import check as workflow

    modes = [name for name, given in (("--against", against), ("--against-python", against_python),
                                      ("--baseline", baseline), ("--save-baseline", save_baseline),
                                      ("--demo", demo)) if given]
    if len(modes) != 1:
        raise typer.BadParameter(f"give exactly one of --against REF, --against-python PATH, --baseline NAME, "
                                 f"--save-baseline NAME, --demo; got {', '.join(modes) or 'none'}")
    if json_out == "-" and annotations:
        raise typer.BadParameter("--json - and --annotations both write to stdout; give --json a file")
    if not demo and not command:
        raise typer.BadParameter("give the script after `--`, e.g. `torchdoctor check --against main -- train.py`",
                                 param_hint="SCRIPT")
    if demo:
        from click.core import ParameterSource

        for name, value in DEMO_WINDOWS.items():
            if ctx.get_parameter_source(name) == ParameterSource.DEFAULT:
                warmup_steps, steps = (value, steps) if name == "warmup_steps" else (warmup_steps, value)
    try:
        policy = Policy(min_rounds=min_rounds, max_rounds=max_rounds, budget_s=budget,
                        min_effect=fraction(min_effect), confidence=confidence, aa_control=aa, seed=seed)
        options = workflow.CheckOptions(
            max_slowdown=fraction(max_slowdown), max_memory_growth=fraction(max_memory_growth), policy=policy,
            warmup_steps=warmup_steps, steps=steps, timed_window_s=timed_window, timeout_s=timeout, memory=memory,
            locate=locate, fork_server=fork_server, same_cwd=same_cwd)
    except (ValueError, TorchDoctorError) as exc:  # bad numbers: a usage error
        raise typer.BadParameter(str(exc)) from None
    outputs = workflow.CheckOutputs(json_out=json_out, markdown_out=markdown_out, junit_out=junit_out,
                                    annotations=annotations, store_path=store)
    script, args = (command[0], command[1:]) if command else ("", [])
    if demo:
        result = workflow.check_demo(options, outputs)
    elif against is not None:
        result = workflow.check_against_ref(script, args, against, options, outputs)
    elif against_python is not None:
        result = workflow.check_against_python(script, args, against_python, options, outputs)
    elif baseline is not None:
        result = workflow.check_against_baseline(script, args, baseline, options, outputs)
    else:
        result = workflow.save_baseline(script, args, save_baseline or "", options, outputs)
    sys.exit(result.exit_code)
