"""Judging one trial: its numerics against the best configuration so far, and its status and
reason from the side-by-side verdict. A value is accepted when it is faster, its numerics pass
(a precision- or compile-changing knob must have been checked) and the script did not undo it."""

from __future__ import annotations

from torchdoctor.bench import FASTER, RunsVerdict
from torchdoctor.knobs import REGISTRY, Knob
from torchdoctor.tune.numerics import (NOISE_MARGIN, NumericsCheck, check_losses, check_outputs,
                                       sampling_tolerance, unchecked)
from torchdoctor.tune.state import ScriptNoise, TuneState
from torchdoctor.tune.trial import ACCEPTED, FAILED, Run, Trial
from torchdoctor.tune.wording import runs_text, speed, speed_ci


def numerics_reference(state: TuneState) -> Run:
    """The run a trial's numerics are compared with: a run of the best configuration so far that
    timed the trials' window, else one of the baseline's, else the baseline's first."""
    return next(iter(state.windowed(state.best.runs) or state.windowed(state.baseline.runs)),
                state.baseline.runs[0])


def check_numerics(knob: Knob, run: Run, reference: Run, noise: ScriptNoise) -> NumericsCheck:
    """`run` (every knob kept so far plus `knob`) against `reference`, a run of the best
    configuration so far (every knob kept so far: the baseline until one is), so that each knob
    answers for its own change under its own tolerance: against the baseline, a kept bf16
    autocast's 4.1% on the loss (within its 5%) failed every later knob's 0.1% (`optimizer_impl`
    rejected on tune_zoo's tiny-ops script for the kept knob's difference). The data stream counts
    as changed when any knob the run applies changes it: a knob tried on top of kept workers sees
    other batches than the baseline did, whatever it does itself (`prefetch_factor` beside a kept
    `persistent_workers` was rejected for a 58% per-step loss difference that was the kept knob's
    other shuffles, on a script that repeats identically). `noise`: the script's own, widening the
    tolerances and deciding whether losses are compared step by step."""
    losses, base_losses = run.losses(), reference.losses()
    count = min(len(losses), len(base_losses))  # the steps both timed (a script may end sooner)
    losses, base_losses = losses[:count], base_losses[:count]
    if any(v is not None for v in losses) and any(v is not None for v in base_losses):
        stream_changed = any(REGISTRY[name].changes_data_stream for name in run.knobs)
        if noise.deterministic and not stream_changed:
            return check_losses(base_losses, losses, knob.loss_rtol, step_by_step=True)
        tolerance = max(knob.loss_rtol, NOISE_MARGIN * (noise.loss or 0.0))
        if stream_changed:
            tolerance = max(tolerance, sampling_tolerance(base_losses))
        return check_losses(base_losses, losses, tolerance)
    if reference.outputs and run.outputs:
        return check_outputs(reference.outputs, run.outputs, knob.output_tolerance,
                             min_agreement=knob.argmax_agreement, noise=noise.output)
    return unchecked("no loss and no model output recorded: numerics not checked")


def judge(trial: Trial, knob: Knob, verdict: RunsVerdict | None, *, accept_unchecked: bool) -> None:
    """Set `trial`'s verdict, ratio, status and reason from its runs, its numerics and `verdict`:
    FAILED when a run failed, ACCEPTED when faster with its numerics intact (unchecked numerics
    only for a knob that cannot change them, or with `accept_unchecked`), else left as it was
    (rejected) with the reason."""
    if verdict is not None:
        trial.verdict = verdict.to_dict()
        trial.ratio = verdict.verdict.ratio
    failed = next((r for r in trial.runs if not r.ok), None)
    if failed is not None:
        trial.status, trial.reason = FAILED, failed.failure[1]
        return
    rejection = _rejection(trial, knob, verdict, accept_unchecked)
    if rejection is not None:
        trial.reason = rejection
        return
    assert verdict is not None  # _rejection says why when there is none
    trial.status = ACCEPTED
    trial.reason = (f"faster side by side: {speed(verdict.verdict.ratio)} ({_decided_on(verdict)}); "
                    f"{(trial.numerics or {}).get('reason', '')}")


def _rejection(trial: Trial, knob: Knob, verdict: RunsVerdict | None, accept_unchecked: bool) -> str | None:
    """Why a trial none of whose runs failed is not accepted, or None when it is."""
    numerics = trial.numerics or {}
    if numerics and not numerics["ok"]:
        return f"numerics: {numerics['reason']}"
    if trial.overridden:
        return f"overridden by the script: {trial.overridden}"
    if verdict is None:
        return "not measured"
    if not verdict.decided:
        return (f"undecided: runs of one configuration disagree (reference {runs_text(verdict.a_means)}, "
                f"candidate {runs_text(verdict.b_means)}): too noisy to decide")
    if verdict.verdict.verdict != FASTER:
        return f"{verdict.verdict.verdict}: {speed(verdict.verdict.ratio)} side by side ({_decided_on(verdict)})"
    if not numerics.get("checked") and knob.changes_numerics and not accept_unchecked:
        return (f"faster ({speed(verdict.verdict.ratio)}) but {numerics.get('reason', 'numerics not checked')}: "
                "a precision- or compile-changing knob is not kept unchecked (--accept-unchecked-numerics keeps it)")
    return None


def _decided_on(verdict: RunsVerdict) -> str:
    """What a decided verdict rests on, in words: the runs' ranks, or the intervals."""
    return _ranked(verdict) if verdict.separated else _trial_ci(verdict)


def _trial_ci(verdict: RunsVerdict) -> str:
    """A trial's intervals in its reason: the one it was decided on, the bootstrap CI of the runs'
    steps against the noise floor (the spread between a side's runs), and, where wider, the one
    across its 2-3 rounds (`RunsVerdict.ci_across_runs`, Student's t for that few). The second alone
    read "kept, faster side by side: x1.10 (95% CI x0.83-x1.46)", a keep of what might be slower
    (tune_zoo); the confirmation's rounds, not a trial's, measure the claim."""
    low, high = verdict.verdict.ci_low, verdict.verdict.ci_high
    runs = f"{len(verdict.a_means)}+{len(verdict.b_means)} runs"
    if not (low > 0 and high > 0):
        return f"{speed_ci(verdict.to_dict())}, {runs}"
    text = f"the steps' 95% CI x{1 / high:.2f}-x{1 / low:.2f}, noise floor {verdict.verdict.noise_floor:.0%}"
    across = verdict.ci_across_runs
    if across is not None and (across[0] < low or across[1] > high):
        text += f"; across its {runs} x{1 / across[1]:.2f}-x{1 / across[0]:.2f}"
    else:
        text += f", {runs}"
    return text


def _ranked(verdict: RunsVerdict) -> str:
    """How runs were decided by their ranks (bench.compare_runs): runs that disagree among
    themselves, or agreeing runs whose spread was as large as the effect."""
    a, b = verdict.a_means, verdict.b_means
    ahead = sum(bi < aj for bi in b for aj in a)
    interval = f"x{1 / verdict.verdict.ci_high:.2f}-x{1 / verdict.verdict.ci_low:.2f}"
    if ahead == len(a) * len(b):
        return f"every one of {len(b)} runs faster than every one of {len(a)} beside it, run ratios {interval}"
    why = (f"runs of a side up to {verdict.spread:.0%} apart" if verdict.corroborated
           else "runs that disagree among themselves")
    return (f"{ahead} of {len(a) * len(b)} pairs of runs faster, {len(a)}+{len(b)} {why}, judged by their "
            f"ranks at 5% one-sided: 90% interval {interval}")
