"""The confirmation: the baseline and the best configuration interleaved for `confirm_rounds`
rounds, and more (up to `confirm_max_rounds`, budget permitting) until the speed-up is precise
within `confirm_precision` (bootstrap CI and run-to-run scatter) and its runs lasted
`confirm_span_s` in all (the machine's minute-to-minute moves averaged in): the claim is what a
user re-running the two configurations should find. Not faster, or too noisy to tell: nothing is
kept. A stop before or during it: the best so far is reported as unconfirmed, with an estimate."""

from __future__ import annotations

import statistics
from typing import Any

from torchdoctor.bench import compare_runs
from torchdoctor.knobs import REGISTRY
from torchdoctor.observe import STEPS_ONLY_SOURCES
from torchdoctor.tune.config import TuneConfig
from torchdoctor.tune.confirmation_report import CONFIRMED, confirmation_report
from torchdoctor.tune.interleave import InterleavePlan, Interleaving, interleave, span_s
from torchdoctor.tune.runner import Interrupted, Runner
from torchdoctor.tune.state import TuneState
from torchdoctor.tune.trial import CONFIRM_BASELINE, CONFIRM_BEST, KEPT, REJECTED, Trial


def confirmation(runner: Runner, state: TuneState, *, search_interrupted: bool) -> dict[str, Any]:
    """The result's `confirmation` of what `state` kept: confirmed side by side, or, when the
    search was interrupted or a stop ends the confirmation, unconfirmed (the latter noted in
    `state.stop_reason`)."""
    if search_interrupted:
        why = f"the search was interrupted ({runner.stopped_by()}) before the confirmation"
        return unconfirmed(state, runner.config, why, confirming=False)
    try:
        return confirm(runner, state)
    except (KeyboardInterrupt, Interrupted):
        stopped_by = runner.stopped_by()
        state.stop_reason += f"; confirmation interrupted ({stopped_by}): result unconfirmed"
        return unconfirmed(state, runner.config, f"the confirmation was interrupted ({stopped_by})", confirming=True)


def confirm(runner: Runner, state: TuneState) -> dict[str, Any]:
    """Baseline and best configuration interleaved: the reported speed-up. Unless it is confirmed,
    nothing is kept: `state` goes back to the baseline, the kept trials become rejected."""
    plan = confirmation_plan(state, runner.config)
    state.interleaving = runs = Interleaving()
    report = confirmation_report(runs, plan, interleave(runner, plan, runs), runner.config)
    if report["status"] != CONFIRMED:
        _keep_nothing(runner, state, report["reason"])
    if runner.setup.progress:
        runner.setup.progress.confirmation_finished(report)
    return report


def confirmation_plan(state: TuneState, config: TuneConfig) -> InterleavePlan:
    """The baseline (A) against the kept knobs (B), each side timed for the confirmation's window
    at its own pace. Step times are all a confirmation reads: observed by the step hooks alone
    where they find the steps (an optimizer's, or the script's markers) and no batch size is needed."""
    per_sample = any(REGISTRY[n].per_sample for n in state.kept)
    baseline = state.baseline.record
    steps_only = not per_sample and baseline is not None and baseline.step_detection in STEPS_ONLY_SOURCES
    steps = (config.confirm_steps(_pace(state.baseline)), config.confirm_steps(_pace(state.best)))
    return InterleavePlan({}, dict(state.kept), (CONFIRM_BASELINE, CONFIRM_BEST), rounds=config.confirm_rounds,
                          max_rounds=config.confirm_max_rounds, per_sample=per_sample, steps=steps,
                          precision=config.confirm_precision, min_span_s=config.confirm_span_s,
                          steps_only=steps_only, confirmation=True)


def unconfirmed(state: TuneState, config: TuneConfig, why: str, *, confirming: bool) -> dict[str, Any]:
    """A stop before or during the confirmation (`confirming`): the best so far, said to be
    unconfirmed; the estimate is what the confirmation measured so far, else the product of the
    kept trials' side-by-side ratios. Its runs are those of `state.interleaving` that ran the
    baseline or the kept knobs."""
    pending = state.interleaving
    a_runs = [r for r in pending.a_runs if r.ok and r.knobs == {}]
    b_runs = [r for r in pending.b_runs if r.ok and r.knobs == state.kept]
    estimate, source = None, "the kept trials' side-by-side ratios multiplied"
    if a_runs and b_runs and confirming:
        if pending.paired:  # the rounds completed so far (a stop between a round's two runs leaves one alone)
            a_runs, b_runs = a_runs[:len(b_runs)], b_runs[:len(a_runs)]
        verdict = compare_runs([r.times(False) for r in a_runs], [r.times(False) for r in b_runs],
                               min_effect=config.min_effect, tolerance=config.run_tolerance, paired=pending.paired)
        estimate, source = verdict.verdict.ratio, f"the confirmation's {len(a_runs)}+{len(b_runs)} runs so far"
    if estimate is None:
        estimate = _kept_ratios(state.trials)
    return {"status": "unconfirmed", "reason": f"{why}: the speed-up is an estimate ({source})",
            "estimate_ratio": estimate, "how": f"not confirmed: estimate from {source}",
            "baseline_runs": [r.to_dict() for r in a_runs], "best_runs": [r.to_dict() for r in b_runs],
            "verdict": None, "rounds": 0, "span_s": span_s(a_runs + b_runs), "per_sample": False,
            "lagging_rounds": [],
            "steps_only": any(r.steps_only for r in a_runs + b_runs)}


def _keep_nothing(runner: Runner, state: TuneState, why: str) -> None:
    """An unconfirmed kept set is dropped: its trials become rejected (saved again), the stop
    reason says why, and the best configuration is the baseline again."""
    for trial in state.trials:
        if trial.status == KEPT:
            trial.status, trial.reason = REJECTED, f"{trial.reason}; not confirmed: {why}"
            runner.save(trial)
    state.stop_reason += f"; not confirmed, nothing kept: {why}"
    state.kept = {}
    state.unchecked_kept = []
    state.best = state.baseline


def _kept_ratios(trials: list[Trial]) -> float:
    """The product of the kept trials' side-by-side ratios: the speed-up they add up to."""
    estimate = 1.0
    for trial in trials:
        if trial.status == KEPT and trial.ratio:
            estimate *= trial.ratio
    return estimate


def _pace(trial: Trial) -> float | None:
    """A configuration's step time as its trial measured it (the median of its runs' paces)."""
    paces = [r.step_s for r in trial.runs if r.ok and r.step_s]
    return statistics.median(paces) if paces else None
