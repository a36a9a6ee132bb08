"""What a confirmation measured, as the result's `confirmation` (docs/tune.md): its figures, how
it was measured in words, its status and reason, and its precision: how uncertain the speed-up
is, and about how many rounds would have made it as precise as aimed at."""

from __future__ import annotations

import math
from typing import Any, Sequence

from torchdoctor.bench import FASTER, RunsVerdict, t_quantile_95
from torchdoctor.tune.config import CONFIRM_MAX_STEPS, TuneConfig
from torchdoctor.tune.interleave import InterleavePlan, Interleaving, span_s
from torchdoctor.tune.trial import interval_source
from torchdoctor.tune.wording import runs_text, speed, speed_ci

CONFIRMED = "confirmed"


def rounds_for_precision(rounds: int, half_width: float, precision: float) -> int | None:
    """About how many rounds would have brought a confirmation of `rounds` rounds, uncertain by
    +-`half_width`, within +-`precision`, if the machine stays as noisy as it was: the run-to-run
    part of the half-width is t(n - 1) x the rounds' scatter / sqrt(n) (RunsVerdict.half_width), so
    the fewest n whose t(n - 1) / sqrt(n) is within precision / half_width of t(rounds - 1) /
    sqrt(rounds): about rounds x (half_width / precision)^2, fewer as more rounds also estimate the
    scatter better. None when it is precise already, or its uncertainty unknown."""
    if rounds < 2 or not math.isfinite(half_width) or half_width <= precision:
        return None
    scatter = half_width * math.sqrt(rounds) / t_quantile_95(rounds - 1)
    needed = rounds + 1
    while t_quantile_95(needed - 1) * scatter / math.sqrt(needed) > precision:
        needed += 1
    return needed


def confirmation_report(runs: Interleaving, plan: InterleavePlan, verdict: RunsVerdict | None,
                        config: TuneConfig) -> dict[str, Any]:
    """The result's `confirmation` for the baseline's runs (A) and the kept knobs' (B) of a
    finished confirmation run by `plan`: `status` CONFIRMED (faster side by side), "failed" (a run
    of the kept knobs failed), "too noisy" or "not faster", and its `reason`."""
    info = _figures(runs, plan, verdict, config)
    failed = next((r for r in runs.b_runs if not r.ok), None)
    if failed is not None or verdict is None:
        reason = f"the kept configuration failed when run again ({failed.failure[1] if failed else 'no runs'})"
        return {**info, "status": "failed", "reason": reason}
    if not verdict.decided:
        reason = (f"too noisy to confirm within the budget: runs of the baseline measured "
                  f"{runs_text(verdict.a_means)} and of the kept knobs {runs_text(verdict.b_means)}: no "
                  f"majority of one side within {config.run_tolerance:.0%}, nor runs whose ranks tell the "
                  "sides apart")
        return {**info, "status": "too noisy", "reason": reason}
    if verdict.verdict.verdict != FASTER:
        reason = (f"side by side the kept knobs are not measurably faster than the baseline "
                  f"({speed(verdict.verdict.ratio)}, {speed_ci(verdict.to_dict())}, noise floor "
                  f"{verdict.verdict.noise_floor:.0%})")
        return {**info, "status": "not faster", "reason": reason}
    return {**info, "status": CONFIRMED, "reason": _confirmed(verdict, info, config)}


def _figures(runs: Interleaving, plan: InterleavePlan, verdict: RunsVerdict | None,
             config: TuneConfig) -> dict[str, Any]:
    """Every key of the confirmation but its status and reason."""
    a_runs, b_runs = runs.a_runs, runs.b_runs
    half_width = verdict.half_width if verdict is not None else math.inf
    rounds = (len(a_runs) + len(b_runs)) // 2
    how = _how(runs, plan, verdict, config)
    if verdict is not None and verdict.disturbed:
        how += f"; {verdict.disturbed} disturbed run(s), outweighed by the median"
    return {"rounds": rounds, "how": how, "span_s": span_s(a_runs + b_runs), "steps_only": plan.steps_only,
            "half_width": half_width if math.isfinite(half_width) else None,
            "precise": half_width <= config.confirm_precision,
            "rounds_for_precision": rounds_for_precision(rounds, half_width, config.confirm_precision),
            "baseline_runs": [r.to_dict() for r in a_runs], "best_runs": [r.to_dict() for r in b_runs],
            "verdict": verdict.to_dict() if verdict else None, "per_sample": plan.per_sample,
            "lagging_rounds": [{"round": i + 1, "speedup": verdict.a_means[i] / verdict.b_means[i]}
                               for i in (verdict.lagging_rounds if verdict else [])]}


def _how(runs: Interleaving, plan: InterleavePlan, verdict: RunsVerdict | None, config: TuneConfig) -> str:
    """How the confirmation measured, in the words the report prints."""
    steps = plan.steps
    window = (f"{steps[0]} timed steps each" if steps[0] == steps[1] else
              f"{steps[0]} timed steps a baseline run and {steps[1]} a kept-knobs run")
    if config.confirm_window_s:
        window += (f" (at least {config.confirm_window_s:g} s of steps, at most {CONFIRM_MAX_STEPS} steps for "
                   "it, or to the script's end)")
    paired = verdict is not None and verdict.paired
    statistic = ("the median of the rounds' ratios (each baseline run over the kept-knobs run next to it)"
                 if paired else "ratio of the medians")
    hooks = "timed by the step hooks alone" if plan.steps_only else "timed with every observation hook (" + (
        "a speed-up per sample reads the batch sizes)" if plan.per_sample else "the steps are not an optimizer's)")
    what = "sample" if plan.per_sample else "step"
    return (f"{len(runs.a_runs)} runs of the baseline and {len(runs.b_runs)} of the kept knobs, interleaved "
            f"(A B B A ...), {window}, {hooks}; speed-up = {statistic} of the runs' "
            f"mean time per {what} (95% CI: {interval_source(verdict.to_dict() if verdict else None)}; "
            "noise floor: the spread between runs "
            f"of one configuration; rounds added, up to {config.confirm_max_rounds}, until the speed-up's "
            f"95% uncertainty was within {config.confirm_precision:.0%}"
            + (f" and the runs lasted {config.confirm_span_s:g} s in all" if config.confirm_span_s else "")
            + f", or the budget ran out; they lasted {span_s(runs.a_runs + runs.b_runs):.0f} s)")


def _confirmed(verdict: RunsVerdict, info: dict[str, Any], config: TuneConfig) -> str:
    """A confirmed speed-up's reason: the speed-up and its CI, why it is less precise than aimed
    at where it is, and the rounds in which the kept knobs gained far less."""
    text = f"confirmed {speed(verdict.verdict.ratio)} ({speed_ci(verdict.to_dict())})"
    if not info["precise"]:
        text += "; " + _imprecision(info, config)
    lagging: Sequence[dict[str, Any]] = info["lagging_rounds"]
    if lagging:
        gains = ", ".join(f"x{r['speedup']:.2f}" for r in lagging)
        text += (f"; in {len(lagging)} of {info['rounds']} rounds the kept knobs gained only {gains}: "
                 "the speed-up depends on the machine's state (other processes' load), and a busier "
                 "machine may see less")
    return text


def _imprecision(info: dict[str, Any], config: TuneConfig) -> str:
    """Why a confirmed speed-up is less precise than aimed at, and what would make it so: a
    user told only "+-15%" cannot tell whether twice the budget would do or fifty times."""
    rounds, needed, half_width = info["rounds"], info["rounds_for_precision"], info["half_width"]
    uncertainty = f"+-{half_width:.0%}" if half_width is not None else "unknown"
    limit = (f"its {rounds} rounds were the most allowed (--confirm-max-rounds)"
             if rounds >= config.confirm_max_rounds else f"the time budget ended it after {rounds} rounds")
    text = (f"its uncertainty, run to run, is {uncertainty}, wider than the {config.confirm_precision:.0%} "
            f"aimed at: {limit}")
    if needed and rounds:
        more_s = (needed - rounds) * info["span_s"] / rounds
        more = f"{more_s / 60:.0f} min" if more_s >= 120 else f"{more_s:.0f} s"
        text += f"; about {needed} rounds (~{more} more) would reach it if the machine stays this noisy"
    return text
