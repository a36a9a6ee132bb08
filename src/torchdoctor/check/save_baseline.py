"""`torchdoctor check --save-baseline NAME`: observe this tree `2 * min_rounds` times (within the
budget) and keep the figures as the baseline NAME, for later checks of this kind of machine."""

from __future__ import annotations

from typing import Any, Sequence

from torchdoctor.bench import RoundInfo
from torchdoctor.check.baseline import BaselineOrigin, baseline_document, write_baseline
from torchdoctor.check.comparisons import compare_figures, secondary_metrics
from torchdoctor.check.config import CheckOptions
from torchdoctor.check.context import CheckContext, Collaborators
from torchdoctor.check.decisions import SAVED
from torchdoctor.check.metric import STEP_TIME
from torchdoctor.check.result import CheckResult
from torchdoctor.check.runner import Runner
from torchdoctor.check.sides import script_path, this_tree
from torchdoctor.check.window import keep_steps, lengthen_window
from torchdoctor.environment import Environment
from torchdoctor.record import Record


def record_baseline(script: str, args: Sequence[str], name: str, options: CheckOptions,
                    collaborators: Collaborators) -> CheckResult:
    """Observe the script `2 * min_rounds` times (within the budget) and keep the figures as NAME."""
    context = CheckContext("save-baseline", script, args, options, collaborators)

    def body(context: CheckContext) -> None:
        side = this_tree(script_path(script))
        runner = Runner.started(context, [side], args)
        pilot = _pilot(context, runner)
        _observe_b(context, runner)
        origin = BaselineOrigin(name, side.script.name, args, pilot.created_at, side.info["commit"],
                                side.info["dirty"])
        env = Environment.or_empty(pilot.env)
        document = baseline_document(origin, env, {"warmup_steps": context.options.warmup_steps,
                                                   "steps": context.options.steps}, runner.figures["B"])
        _saved(context, runner, name, document, write_baseline(name, document, context.open_store))

    return context.run(body)


def _pilot(context: CheckContext, runner: Runner) -> Record:
    """The pilot, and the window it sets (tried once more when lengthened)."""
    context.progress.phase("pilot run")
    pilot = runner.observe("B", purpose="pilot")
    if lengthen_window(context, pilot):
        probe = runner.observe("B", purpose="pilot")
        if len(probe.steps) < context.options.steps:
            keep_steps(context, probe)
    return pilot


def _observe_b(context: CheckContext, runner: Runner) -> None:
    """`2 * min_rounds` observations, fewer (with a warning) when the budget cannot hold another."""
    options, result = context.options, context.result
    budget_s = options.policy.budget_s
    wanted = 2 * options.policy.min_rounds
    for done in range(1, wanted + 1):
        runner.measure("B")
        result.rounds = done
        context.progress.round(RoundInfo(done, wanted, context.elapsed(), budget_s), context.elapsed(), budget_s)
        if done < wanted and context.elapsed() * (done + 1) / done > budget_s:
            result.warnings.append(f"the budget of {budget_s:g} s allowed {done} of {wanted} observations")
            break


def _saved(context: CheckContext, runner: Runner, name: str, document: dict[str, Any], where: str) -> None:
    """The result of a saved baseline: where it went, its noise and fingerprint, its figures."""
    result, options, figures = context.result, context.options, runner.figures["B"]
    result.samples_s = {"B": [f["step_s"] for f in figures]}
    result.env = {"b": document["fingerprint"]}
    result.baseline = {"name": name, "saved_to": where, "noise": document["noise"],
                       "observations": len(figures), "fingerprint": document["fingerprint"]}
    result.metrics = secondary_metrics(options, [], figures, "step_s")
    result.metrics.insert(0, compare_figures(STEP_TIME, [], [f["step_s"] for f in figures], options.policy))
    result.decision = SAVED
    result.reason = (f"baseline {name!r} saved to {where}: {len(figures)} observations of "
                     f"{options.steps} steps")
