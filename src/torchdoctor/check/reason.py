"""The one sentence that says why the check decided what it did."""

from __future__ import annotations

from typing import Sequence

from torchdoctor.check.decisions import PASS, REGRESSION, UNDECIDED
from torchdoctor.check.metric import Metric


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:+.1f}%"


def describe(metric: Metric) -> str:
    """'step time +12.3% (95% CI +9.8% .. +14.1%)' (CI left out when there is none)."""
    text = f"{metric.label} {_pct(metric.change)}"
    if metric.ci_low is not None and metric.ci_high is not None:
        text += f" (95% CI {_pct(metric.ci_low - 1)} .. {_pct(metric.ci_high - 1)})"
    return text


def reason_for(decision: str, metrics: Sequence[Metric], *, stop_reason: str | None, rounds: int,
               budget_s: float | None, stopped_by: str = "Ctrl-C") -> str:
    """One sentence saying why the check decided what it did (`stopped_by`: the stop signal that
    interrupted it, as the user would name it)."""
    gated = [m for m in metrics if m.gate is not None]
    if decision == REGRESSION:
        bad = [m for m in gated if m.gate == REGRESSION]
        return "; ".join(f"{describe(m)} is beyond the allowed {_pct(m.threshold)}" for m in bad)
    if decision == PASS:
        return _why_it_passed(next((m for m in gated if m.unit == "s"), gated[0]))
    if stop_reason == "interrupted":
        measured = "; ".join(describe(m) for m in gated if m.ratio is not None)
        return (f"interrupted ({stopped_by}) after {rounds} complete round(s): "
                + (f"measured so far {measured}" if measured else "too little measured for a verdict"))
    if stop_reason == "budget":
        why = f"cannot decide within the budget of {budget_s:g} s ({rounds} rounds)"
    else:
        why = f"cannot decide after {rounds} rounds"
    parts = [_why_undecided(m) for m in gated if m.gate == UNDECIDED]
    if not parts:
        return why
    return f"{why}: " + "; ".join(parts) + "; raise --budget or --steps, or run on a quieter machine"


def _why_it_passed(time_metric: Metric) -> str:
    """A pass: ruled out by the last look's own CI, or within the threshold at the last look."""
    threshold = _pct(time_metric.threshold)
    bound = time_metric.pass_bound if time_metric.pass_bound is not None else time_metric.ci_high
    if bound is not None and bound - 1.0 <= (time_metric.threshold or 0.0):
        text = (f"{describe(time_metric)} rules out a slowdown beyond {threshold} (the last look's own 95% CI "
                f"ends at {_pct(bound - 1.0)})")
    else:
        text = (f"{describe(time_metric)} is within the allowed {threshold}: no significant slowdown beyond it "
                f"(the CI still reaches {_pct((time_metric.ci_high or 1.0) - 1.0)}; smallest detectable slowdown "
                f"{_pct(time_metric.min_detectable_effect)})")
    if time_metric.verdict == "worse":
        text += "; slower, but within the allowed slowdown"
    return text


def _why_undecided(m: Metric) -> str:
    """An undecided metric: too few samples, or at the threshold without being significant."""
    if m.n_a < 5 or m.n_b < 5:
        return f"{m.label}: only {min(m.n_a, m.n_b)} sample(s) a side, 5 needed for a verdict"
    part = f"{describe(m)} is at or beyond the {_pct(m.threshold)} threshold but not significantly slower"
    if m.noise_floor is not None:
        part += f" (noise floor {100 * m.noise_floor:.1f}%"
        if m.min_detectable_effect is not None:
            part += f", smallest detectable slowdown {100 * m.min_detectable_effect:.1f}%"
        part += ")"
    return part
