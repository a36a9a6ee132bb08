"""The baseline: the unmodified script run again until two runs agree, the script's own noise
measured from them, and the noise the result reports. When runs disagree by more than
`run_tolerance` (one was disturbed), the baseline is re-measured, up to `max_rounds` runs; if none
agree, the machine is too noisy to decide anything and the search says so."""

from __future__ import annotations

import dataclasses
from typing import Any

from torchdoctor.bench import agreeing_runs
from torchdoctor.tune.numerics import check_losses, distribution_difference, losses_identical
from torchdoctor.tune.runner import Runner
from torchdoctor.tune.state import ScriptNoise, TuneState
from torchdoctor.tune.trial import BASELINE_RUN, Run, Trial
from torchdoctor.tune.wording import ms, runs_text


def measure_baseline(runner: Runner, state: TuneState) -> None:
    """Repeat the baseline (unless `repeat_baseline` is off), then give it its reason, save it and
    report it, even when a stop ends the repeats (the stop is raised again)."""
    try:
        if runner.config.repeat_baseline:
            _repeat(runner, state)
    finally:
        _finish(runner, state)


def _repeat(runner: Runner, state: TuneState) -> None:
    """Run the baseline again: the two runs' difference is the script's own noise. When they
    disagree (one was disturbed), run it again until two agree (or give up: too noisy)."""
    config, runs = runner.config, state.baseline.runs
    while True:
        repeat = runner.observe({}, BASELINE_RUN, timing_steps=state.trial_steps)
        if not repeat.ok:
            state.baseline.reason = f"baseline repeat failed ({repeat.failure[1]}): run-to-run noise not measured"
            return
        runs.append(repeat)
        windowed = state.windowed(runs)
        if len(windowed) == 2:
            state.noise = script_noise(windowed[0], windowed[1])
        medians = [r.step_s or float("inf") for r in runs]
        agree = agreeing_runs(medians, config.run_tolerance)
        for index, run in enumerate(runs):
            run.disturbed = index not in agree
        # A majority corroborates, and two runs timed the trials' window (the numerics' reference).
        if len(agree) >= 2 and len(agree) > len(runs) / 2 and len(windowed) >= 2:
            return
        if len(runs) >= max(config.max_rounds, 3) or not runner.room(1):
            # Go on: only effects larger than this noise (every run beyond every other) can be
            # decided now; if none is, the result says the machine was too noisy.
            state.noise = dataclasses.replace(state.noise, too_noisy=(
                f"{len(runs)} runs of the unmodified script measured {runs_text(medians)} per step, no majority "
                f"of them within {config.run_tolerance:.0%} of each other"))
            return


def script_noise(first: Run, repeat: Run) -> ScriptNoise:
    """Loss and output differences between two baseline runs, and whether they are identical."""
    check = check_losses(first.losses(), repeat.losses(), 0.0)
    if check.checked:
        return ScriptNoise(loss=check.difference, deterministic=losses_identical(first.losses(), repeat.losses()))
    if first.outputs and repeat.outputs:
        count = min(len(first.outputs), len(repeat.outputs))
        return ScriptNoise(
            output=distribution_difference(first.outputs[:count], repeat.outputs[:count]),
            deterministic=all(bool((a["sample"] == b["sample"]).all()) for a, b in zip(first.outputs, repeat.outputs)))
    return ScriptNoise()


def _finish(runner: Runner, state: TuneState) -> None:
    """The baseline's reason (its runs, disturbed ones, the loss noise), unless a failed repeat gave
    one; saved and reported."""
    baseline = state.baseline
    if not baseline.reason:
        runs = baseline.runs
        parts = [f"{len(runs)} run(s): {', '.join(ms(r.step_s) for r in runs)} per step"]
        if any(r.disturbed for r in runs):
            parts.append(f"{sum(r.disturbed for r in runs)} run(s) disagree with the others (disturbed)")
        if state.noise.loss is not None:
            parts.append(f"run to run the mean loss differs by {state.noise.loss:.3%}")
        if state.noise.deterministic:
            parts.append("the script repeats identically (numerics compared step by step)")
        baseline.reason = "; ".join(parts)
    runner.save(baseline)
    if runner.setup.progress:
        runner.setup.progress.trial_finished(baseline, baseline)


def noise_report(baseline: Trial, noise: ScriptNoise) -> dict[str, Any]:
    """The result's `noise` (docs/tune.md): the first baseline run's step-time spread, the repeat's
    ratio to it, every baseline run's pace, and the script's own noise."""
    runs = [r for r in baseline.runs if r.ok]
    times = sorted(runs[0].times(per_sample=False)) if runs else []
    report: dict[str, Any] = {"spread": None, "step_s_p10": None, "step_s_p90": None, "repeat_step_ratio": None}
    if times:  # within the first run: (p90 - p10) / median of its step times
        p10, p50, p90 = (times[int(q * (len(times) - 1))] for q in (0.1, 0.5, 0.9))
        report.update(spread=(p90 - p10) / p50 if p50 else None, step_s_p10=p10, step_s_p90=p90)
    if len(runs) > 1 and runs[0].step_s and runs[1].step_s:
        report["repeat_step_ratio"] = runs[1].step_s / runs[0].step_s
    return {**report, "runs_step_s": [r.step_s for r in runs], "disturbed_runs": sum(r.disturbed for r in runs),
            "loss_difference": noise.loss, "output_difference": noise.output,
            "deterministic": noise.deterministic, "too_noisy": noise.too_noisy}
