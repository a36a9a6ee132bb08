"""One trial: a knob value run side by side with the best configuration so far (A, the kept
knobs) against the candidate (B, the kept knobs plus this value), checked after the candidate's
first run and judged (`torchdoctor.tune.judge`)."""

from __future__ import annotations

from typing import Any

from torchdoctor.knobs import REGISTRY, Knob
from torchdoctor.tune.interleave import InterleavePlan, Interleaving, interleave
from torchdoctor.tune.judge import check_numerics, judge, numerics_reference
from torchdoctor.tune.memory import judge_memory
from torchdoctor.tune.runner import Interrupted, Runner
from torchdoctor.tune.state import TuneState
from torchdoctor.tune.trial import CANDIDATE, INTERRUPTED, REFERENCE, REJECTED, Run, Trial


def try_value(runner: Runner, state: TuneState, knob: Knob, value: Any,
              companions: dict[str, Any] | None = None) -> Trial:
    """Trial `knob`=`value` on top of the kept knobs, with `companions` (the other knobs its
    finding's fix sets, tried as one fix), added to `state.trials` and returned judged (ACCEPTED,
    rejected or FAILED: the search settles the knob's values). A stop during it marks the trial
    INTERRUPTED with the runs it had, saves it and raises again."""
    config, companions = runner.config, companions or {}
    trial = Trial(index=len(state.trials), knob=knob.name, value=value,
                  knobs={**state.kept, **companions, knob.name: value}, status=REJECTED)
    state.trials.append(trial)
    progress = runner.setup.progress
    if progress:
        together = "".join(f" with {name}={item!r}" for name, item in companions.items())
        progress.trial_started(trial.index, f"{knob.name}={value!r}{together}")
    plan = InterleavePlan(dict(state.kept), trial.knobs, (REFERENCE, CANDIDATE), rounds=config.rounds,
                          max_rounds=config.max_rounds,
                          per_sample=any(REGISTRY[n].per_sample for n in trial.knobs),
                          steps=(state.trial_steps, state.trial_steps))
    state.interleaving = runs = Interleaving()
    try:
        verdict = interleave(runner, plan, runs, first_b=lambda run: first_checks(trial, knob, run, state))
    except (Interrupted, KeyboardInterrupt):
        trial.reference, trial.runs = runs.a_runs, runs.b_runs
        trial.status, trial.reason = INTERRUPTED, f"interrupted ({runner.stopped_by()})"
        runner.save(trial)
        raise
    trial.reference, trial.runs = runs.a_runs, runs.b_runs
    judge(trial, knob, verdict, accept_unchecked=config.accept_unchecked_numerics)
    judge_memory(trial, config.max_memory_growth)
    if progress:
        progress.trial_finished(trial, state.best)
    return trial


def first_checks(trial: Trial, knob: Knob, run: Run, state: TuneState) -> bool:
    """After the candidate's first run: numerics and whether the script undid the knob, recorded
    on `trial`. False stops the trial (no speed measurement can change a wrong result)."""
    trial.overridden = knob.overridden(trial.value, run.record)
    numerics = check_numerics(knob, run, numerics_reference(state), state.noise)
    trial.numerics = numerics.to_dict()
    return numerics.ok and not trial.overridden
