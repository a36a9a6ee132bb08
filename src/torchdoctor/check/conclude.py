"""The end of a comparison: the decision and its reason from the metrics, and, on a regression,
where it lives."""

from __future__ import annotations

from typing import Any

from torchdoctor.check.context import CheckContext
from torchdoctor.check.decisions import REGRESSION, UNDECIDED
from torchdoctor.check.gate import decide
from torchdoctor.check.locate import locate
from torchdoctor.check.reason import reason_for
from torchdoctor.check.runner import Runner


def conclude(context: CheckContext, runner: Runner, a_figures: list[dict[str, Any]],
             b_figures: list[dict[str, Any]]) -> None:
    """Decision and reason from the result's metrics (an interrupted check is undecided); a
    regression is located from the figures of both sides and, where A can run, their profiles."""
    result = context.result
    result.decision = decide(result.metrics)
    if result.stop_reason == "interrupted":
        result.decision = UNDECIDED
    result.reason = reason_for(result.decision, result.metrics, stop_reason=result.stop_reason,
                               rounds=result.rounds, budget_s=context.options.policy.budget_s,
                               stopped_by=context.stop_name())
    if result.decision == REGRESSION:
        result.location = locate(context, runner, a_figures, b_figures)
