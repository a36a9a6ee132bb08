"""What the diagnosis claimed, against what tune measured: every finding whose fix is a knob is
backed by a measurement of that fix.

A finding whose fix is a knob claims that the fix wins back `upside` of the step: a speed-up of
1 / (1 - upside). tune tries that knob on the real script, side by side with the configuration of
the moment (the baseline, or the knobs kept before it), so every such claim meets a measurement in
the same session: the knob's kept trial, else its fastest decided one, else its fastest. The claim
is that of the value tried: a finding that names its own value (27 workers) and a trial of another
(6) are compared at 6, by the finding's own bound (`claimed_speedup_for_trial`), as a claim for 27
workers says nothing of 6. The claim is then `agrees` (within the measured 95% CI), `over-claims` (above it),
`under-claims` (below it), `slower` (the fix measured slower, whatever was claimed) or `undecided`
(no CI: too few steps, or the runs disagreed); a knob never tried says why.
"""

from __future__ import annotations

from typing import Any, Collection, Sequence

from torchdoctor.bench import SLOWER
from torchdoctor.finding import Finding
from torchdoctor.rules.workers_bound import speedup_with_workers
from torchdoctor.tune.trial import KEPT, Trial, speedup_interval

AGREES, OVER, UNDER, SLOWER_THAN_BEFORE, UNDECIDED, NOT_TRIED = (
    "agrees", "over-claims", "under-claims", "slower", "undecided", "not tried")
#: A row's measurement; null in a row whose knob was not tried (every row has every key).
MEASURED_KEYS = ("trial", "value", "tried_on", "claimed_speedup_for_trial", "measured_speedup", "measured_speedup_ci",
                 "measured_verdict", "status")


def claimed_speedup(upside: float) -> float:
    """The speed-up a finding's upside (share of the step its fix wins back) stands for."""
    return 1.0 / max(1.0 - upside, 1e-3)


def check_claims(findings: Sequence[Finding], trials: Sequence[Trial], *, considered: Collection[str],
                 candidates: Collection[str]) -> list[dict[str, Any]]:
    """One row per finding with a knob, in the diagnosis's order (docs/tune.md, `findings`); every
    row has every key.
    `considered`: knobs the search reached; `candidates`: knobs it would have tried."""
    rows = []
    for finding in findings:
        knob = finding.knob
        if not knob:
            continue
        upside = float(finding.upside)
        row: dict[str, Any] = {"id": finding.id, "title": finding.title, "knob": knob,
                               "claimed_upside": upside, "claimed_speedup": claimed_speedup(upside)}
        tried = [t for t in trials if t.knob == knob and t.ratio]
        if not tried:
            row.update(assessment=NOT_TRIED, reason=_not_tried(knob, trials, considered, candidates),
                       **dict.fromkeys(MEASURED_KEYS))
        else:
            trial = _representative(tried)
            row.update(reason=None, **_measured(trial, _claim_for(finding, trial, row["claimed_speedup"])))
        rows.append(row)
    return rows


def _representative(tried: list[Trial]) -> Trial:
    """The knob's kept trial, else its fastest decided one, else its fastest."""
    kept = [t for t in tried if t.status == KEPT]
    decided = [t for t in tried if (t.verdict or {}).get("decided")]
    return (kept or [min(decided or tried, key=lambda t: t.ratio)])[0]


def _claim_for(finding: Finding, trial: Trial, claimed: float) -> float:
    """The finding's claim for the trial's value: its own where the trial tried the fix's value or
    the claim does not depend on it; else what the finding's bound gives for that value."""
    evidence = finding.evidence
    fix_workers, value = evidence.get("workers_in_fix"), trial.value
    if trial.knob != "num_workers" or not isinstance(value, int) or value == fix_workers:
        return claimed
    return speedup_with_workers(evidence, value) or claimed


def _measured(trial: Trial, claimed: float) -> dict[str, Any]:
    verdict = trial.verdict or {}
    ci = speedup_interval(verdict)
    if verdict.get("verdict") == SLOWER and verdict.get("decided"):
        assessment = SLOWER_THAN_BEFORE
    elif ci is None or not verdict.get("decided"):
        assessment = UNDECIDED
    elif claimed > ci[1]:
        assessment = OVER
    elif claimed < ci[0]:
        assessment = UNDER
    else:
        assessment = AGREES
    return {"assessment": assessment, "trial": trial.index, "value": trial.value,
            "tried_on": {k: v for k, v in trial.knobs.items() if k != trial.knob}, "claimed_speedup_for_trial": claimed,
            "measured_speedup": 1.0 / trial.ratio, "measured_speedup_ci": ci,
            "measured_verdict": verdict.get("verdict"), "status": trial.status}


def _not_tried(knob: str, trials: Sequence[Trial], considered: Collection[str], candidates: Collection[str]) -> str:
    if knob not in candidates:
        return "not among the knobs tune was asked to try (--knobs)"
    if any(t.knob == knob for t in trials):
        return "its trials measured nothing (failed or stopped by the numerics check or the script: see trials)"
    if knob in considered:
        return "the knob does not apply to this run"
    return "the search ended before it (see stop_reason)"
