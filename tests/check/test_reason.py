"""The sentence that says why the check decided what it did."""

from __future__ import annotations

from torchdoctor.check.comparisons import metric_from_verdict
from torchdoctor.check.decisions import UNDECIDED
from torchdoctor.check.gate import GateLook
from torchdoctor.check.metric import STEP_TIME
from torchdoctor.check.reason import reason_for
from tests.check.values import verdict


def test_the_undecided_reason_says_why_and_what_to_do() -> None:
    metric = metric_from_verdict(STEP_TIME, verdict(1.07, 0.99, 1.15), [1.0] * 8, [1.07] * 8,
                                 GateLook(max_slowdown=0.05))
    reason = reason_for(UNDECIDED, [metric], stop_reason="budget", rounds=12, budget_s=60)
    assert reason.startswith("cannot decide within the budget of 60 s (12 rounds)")
    assert "not significantly slower" in reason and "noise floor 2.0%" in reason and "raise --budget" in reason
    interrupted = reason_for(UNDECIDED, [metric], stop_reason="interrupted", rounds=3, budget_s=60)
    assert interrupted.startswith("interrupted (Ctrl-C) after 3 complete round(s): measured so far step time +7.0%")
