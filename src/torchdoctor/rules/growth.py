"""Steps that cost more the longer the script runs, seen within the timing window: work that grows
with the run. A tensor concatenated onto at every step (`all_out = torch.cat([all_out, out])`), a
list of losses or outputs kept with their autograd graphs, a history re-processed each step: each
step does a little more than the one before, so a long run's total cost is quadratic in its steps,
and no fixed per-step cost explains it. Read from the timed steps' wall times, which no other rule
reads as a sequence (the whole-run trends of `watch` need 100 steps or more).

Why a rank correlation and a Theil-Sen line rather than a least-squares fit: one stalled step
(a descheduled process, a garbage collection) pulls a least-squares slope and its r² anywhere, while
a rise that holds step after step ranks the steps in their order whatever the size of each rise.
Both are written here (a few lines each) because scipy, which has them, is not a dependency.
"""

from __future__ import annotations

import statistics

from torchdoctor.finding import Fix
from torchdoctor.rules.base import Hit, MissingEvidence, rule, severity_at
from torchdoctor.rules.evidence import Evidence

#: Fewest timed steps a trend is read from.
MIN_STEPS = 8
#: Spearman's rank correlation of the step times with the step index from which they rise steadily.
MONOTONE = 0.9
#: The fitted last step over the fitted first one from which the rise is reported.
GROWTH = 1.5
WARNING, PROBLEM = 0.10, 0.25


@rule("TD-COMP-046", "compute")
def steps_grow(ev: Evidence) -> Hit | None:
    """The timed steps (at least 8) cost more one after the other: their rank correlation with the
    step index is 0.9 or more (Spearman) and the Theil-Sen line through them ends 1.5x or more
    above where it starts; not on a busy machine (`Accounting.busy`: a load that rises through the
    window slows every step). Upside: the part of the last step the rise added (1 - fitted first /
    fitted last), what keeping the growing work out of the step wins at that point of the run and
    a lower bound for the run after it; a warning from 10%, a problem from 25%. The largest
    operator group of the step (the accounting's first cost centre) is named when the Record has it."""
    walls = ev.step_walls_s()
    if len(walls) < MIN_STEPS or _busy(ev):
        return None
    rho, (first, last) = spearman(walls), theil_sen_ends(walls)
    if rho < MONOTONE or first <= 0 or last / first < GROWTH:
        return None
    share = 1 - first / last
    severity = severity_at(share, WARNING, PROBLEM)
    if severity is None:
        return None
    evidence = {"steps": len(walls), "rank_correlation": round(rho, 3), "fitted_first_ms": round(first * 1e3, 3),
                "fitted_last_ms": round(last * 1e3, 3), "growth": round(last / first, 3), **_largest(ev)}
    return Hit(severity, f"each step costs more than the last: {last / first:.1f}x over {len(walls)} steps",
               share, evidence,
               "The step time rises with the step count: something the step works on grows with the run, "
               "a tensor concatenated onto every step, a list of losses or outputs kept with their autograd "
               "graphs, a history processed again each step. A long run's cost then grows with the square of "
               "its steps." + _named(evidence),
               Fix("Keep what grows out of the step: collect outputs in a Python list and concatenate once "
                   "after the loop (or fill a pre-allocated tensor), and keep losses as numbers (`.item()`) "
                   "or detached tensors.",
                   "outputs.append(out)  # was: all_out = torch.cat([all_out, out]) in every step\n"
                   "...\n"
                   "all_out = torch.cat(outputs)  # once, after the loop"))


def spearman(values: list[float]) -> float:
    """Spearman's rank correlation of `values` with their index (ties ranked in order of index)."""
    n = len(values)
    ranks = [0] * n
    for rank, index in enumerate(sorted(range(n), key=lambda i: values[i])):
        ranks[index] = rank
    middle = (n - 1) / 2
    spread = sum((i - middle) ** 2 for i in range(n))
    return sum((i - middle) * (ranks[i] - middle) for i in range(n)) / spread if spread else 0.0


def theil_sen_ends(values: list[float]) -> tuple[float, float]:
    """The Theil-Sen line through `values` by index (the median of the pairwise slopes, through the
    median point) at the first and at the last index."""
    n = len(values)
    slope = statistics.median((values[j] - values[i]) / (j - i) for i in range(n) for j in range(i + 1, n))
    centre = statistics.median(values) - slope * (n - 1) / 2
    return centre, centre + slope * (n - 1)


def _busy(ev: Evidence) -> bool:
    try:
        return ev.accounting().busy
    except MissingEvidence:
        return False


def _largest(ev: Evidence) -> dict[str, object]:
    """The step's largest operator group now (the accounting's first cost centre), where known."""
    try:
        centres = ev.accounting().cost_centres
    except MissingEvidence:
        return {}
    if not centres:
        return {}
    top = centres[0]
    return {"operator": top.name, "operator_share_fraction": round(top.share, 4), "source": top.source}


def _named(evidence: dict[str, object]) -> str:
    if "operator" not in evidence:
        return ""
    where = f", called from {evidence['source']}" if evidence.get("source") else ""
    return (f" The step's largest operator now is {evidence['operator']} "
            f"({float(evidence['operator_share_fraction']):.0%} of the step{where}).")  # type: ignore[arg-type]
