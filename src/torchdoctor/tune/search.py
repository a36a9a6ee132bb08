"""The search: which knob next, which value next, when to stop.

Knobs the script's structure requires come first, then those the findings name, by decreasing
upside (`torchdoctor.tune.candidates`);
bool knobs take one trial, choice knobs one per choice, integer knobs an Optuna ask/tell search.
Each value is a trial on top of what was kept (`torchdoctor.tune.trial_runner`); the fastest
accepted value of a knob is kept. Two passes: the second retries what the first did not keep on
top of what it kept. The search stops on `max_trials`, when the budget leaves no room for another
trial and the confirmation, or on diminishing returns: `patience` knobs in a row not kept or
gaining less than `min_gain`, and only once every knob the findings name was considered, every
knob whose structural precondition holds (`torchdoctor.tune.structure`) was tried to a decision,
and, under an explicit `--time-budget`, no more than half of it is left. A knob whose every trial
came back undecided (too noisy) counts as untried: it neither ends a run of no gain nor settles
a precondition. A knob whose finding's fix sets other knobs with it (TD-DATA-002's workers with
one intra-op thread) is tried, and kept, together with them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

import optuna

from torchdoctor.knobs import REGISTRY, IntRange, Knob
from torchdoctor.tune.budget import runs_per_trial
from torchdoctor.tune.config import TuneConfig
from torchdoctor.tune.runner import Runner
from torchdoctor.tune.state import TuneState
from torchdoctor.tune.trial import ACCEPTED, FAILED, KEPT, REJECTED, Trial, undecided
from torchdoctor.tune.trial_runner import try_value
from torchdoctor.tune.wording import speed

#: Passes over the candidates. Knobs interact (DataLoader workers and intra-op threads share the
#: cores), so a knob rejected before another was kept is tried once more on top of it.
PASSES = 2

__all__ = ["PASSES", "SearchHistory", "budget_name", "diminishing", "search", "settle", "stop_reason"]


@dataclass(slots=True)
class SearchHistory:
    """What the search went through. `named`: knobs the findings name, considered before any stop
    rule but the limits; `required`: knob -> its structural precondition, tried to a decision
    before diminishing returns may end the search; `considered`: knobs it reached; `decided`:
    knobs with a decided trial, or that do not apply; `tried_on`: knob -> the kept knobs it was
    last tried on; `no_gain`: knobs in a row not kept or gaining less than `min_gain`;
    `outcomes`: what each knob tried came to, in words, for the stop reason; `companions`: knob
    -> the other knobs its finding's fix sets with it, tried and kept together with it."""

    named: list[str]
    required: dict[str, str] = field(default_factory=dict)
    companions: dict[str, dict[str, Any]] = field(default_factory=dict)
    considered: set[str] = field(default_factory=set)
    decided: set[str] = field(default_factory=set)
    tried_on: dict[str, dict[str, Any]] = field(default_factory=dict)
    no_gain: int = 0
    outcomes: list[str] = field(default_factory=list)

    def record(self, knob: str, winner: Trial | None, group: Sequence[Trial], min_gain: float) -> None:
        """Count a settled knob's gain against `min_gain` and note its outcome; a knob whose trials
        were all undecided counts as untried."""
        if group and winner is None and all(undecided(t) for t in group):
            self.outcomes.append(f"{knob}: undecided (too noisy), counted as untried")
            return
        if group:
            self.decided.add(knob)
        gain = 1.0 - winner.ratio if winner is not None and winner.ratio else 0.0
        self.no_gain = 0 if gain >= min_gain else self.no_gain + 1
        if winner is not None:
            self.outcomes.append(f"{knob}: kept, {speed(winner.ratio)}")
        elif group:
            best_try = min(group, key=lambda t: t.ratio if t.ratio else float("inf"))
            self.outcomes.append(f"{knob}: not kept, {best_try.reason.split(';')[0]}")


def search(runner: Runner, state: TuneState, order: Sequence[str], history: SearchHistory) -> None:
    """Try the knobs of `order` (best first) on top of what is kept, up to PASSES passes, each
    over the knobs not kept yet; a pass that keeps nothing is the last. Keeps into `state`; its
    `stop_reason` says why it ended. A stop signal is raised through (runner.Interrupted)."""
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    for _ in range(PASSES):
        kept_before = dict(state.kept)
        _search_pass(runner, state, [name for name in order if name not in state.kept], history)
        if state.kept == kept_before or _stopping(runner, state, history):
            break


def stop_reason(runner: Runner, state: TuneState, history: SearchHistory) -> str | None:
    """Why the search must stop before another trial, or None: `max_trials` trials run, no room in
    the budget for another trial and the confirmation, or diminishing returns (`diminishing`)."""
    config = runner.config
    if sum(t.knob is not None for t in state.trials) >= config.max_trials:
        return f"--max-trials {config.max_trials} reached"
    if not runner.room(runs_per_trial(config)):
        return f"{budget_name(config)}: no room for another trial and the confirmation"
    if diminishing(history, config, runner.elapsed_s()):
        recent = "; ".join(history.outcomes[-config.patience:])
        return (f"diminishing returns: none of the last {config.patience} knobs tried gained "
                f"{config.min_gain:.0%} or more ({recent})")
    return None


def diminishing(history: SearchHistory, config: TuneConfig, elapsed_s: float) -> bool:
    """Whether diminishing returns may end the search: `patience` knobs in a row without gain,
    every named knob considered, every required one decided, and, under an explicit time budget,
    at least half of it spent."""
    if history.no_gain < config.patience or not set(history.named) <= history.considered:
        return False
    if not set(history.required) <= history.decided:
        return False
    return config.time_budget_s is None or elapsed_s >= config.time_budget_s / 2


def budget_name(config: TuneConfig) -> str:
    """The budget in force, in words: the user's `--time-budget`, or the default one."""
    if config.time_budget_s is not None:
        return f"--time-budget {config.time_budget_s:.0f} s"
    return f"the default budget of {config.budget_s:.0f} s (no --time-budget given)"


def _stopping(runner: Runner, state: TuneState, history: SearchHistory) -> bool:
    """Whether the search stops now; if so, `state.stop_reason` says why."""
    reason = stop_reason(runner, state, history)
    if reason is not None:
        state.stop_reason = reason
    return reason is not None


def _search_pass(runner: Runner, state: TuneState, names: Sequence[str], history: SearchHistory) -> None:
    """One pass over `names`: each knob that applies to the best configuration is tuned, unless it
    was last tried on exactly the knobs kept now (the same trial again)."""
    for name in names:
        if _stopping(runner, state, history):
            return
        knob = REGISTRY[name]
        if history.tried_on.get(name) == state.kept:
            continue
        history.considered.add(name)
        if knob.applies(state.best.record):
            _tune_knob(runner, state, knob, history)
        else:
            history.decided.add(name)  # nothing to try: its precondition cannot hold a search back


def _tune_knob(runner: Runner, state: TuneState, knob: Knob, history: SearchHistory) -> None:
    """Try `knob`'s values (each choice in turn, or an integer search) and keep its fastest
    accepted one; the values tried so far are settled even when a stop ends it."""
    history.tried_on[knob.name] = dict(state.kept)
    group: list[Trial] = []
    companions = {name: value for name, value in history.companions.get(knob.name, {}).items()
                  if name not in state.kept and name in REGISTRY}
    try:
        if knob.kind == "int":
            _search_int(runner, state, knob, group, history, companions)
        else:
            for value in knob.choices(state.best.record):
                if group and _stopping(runner, state, history):
                    break
                group.append(try_value(runner, state, knob, value, companions))
    finally:
        winner = settle(runner, state, knob, group)
    history.record(knob.name, winner, group, runner.config.min_gain)


def _search_int(runner: Runner, state: TuneState, knob: Knob, group: list[Trial], history: SearchHistory,
                companions: dict[str, Any]) -> None:
    """An integer knob's values by Optuna's TPE (ask/tell), from the knob's first value, up to
    `int_trials` trials into `group`, each with `companions`; a value the best configuration already runs counts as ratio
    1, a failed trial or failed numerics as a failed Optuna trial."""
    config, record = runner.config, state.best.record
    span = knob.int_range(record)
    study = optuna.create_study(direction="minimize",
                                sampler=optuna.samplers.TPESampler(seed=config.seed, n_startup_trials=1))
    study.enqueue_trial({knob.name: span.first})
    distribution = {knob.name: optuna.distributions.IntDistribution(span.low, span.high)}
    seen: dict[int, float | None] = {}
    if knob.current(record) is not None:  # what the best run already measures: ratio 1
        seen[knob.current(record)] = 1.0
    for _ in range(config.int_trials * 4):  # bounded even if Optuna keeps proposing known values
        if len(group) >= config.int_trials or (group and _stopping(runner, state, history)) \
                or len(set(seen) & _values(span)) > span.high - span.low:
            break
        asked = study.ask(distribution)
        value = asked.params[knob.name]
        if value not in seen:
            trial = try_value(runner, state, knob, value, companions)
            group.append(trial)
            numerics_failed = trial.numerics is not None and not trial.numerics["ok"]
            seen[value] = None if trial.status == FAILED or numerics_failed or not trial.ratio else trial.ratio
        if seen[value] is None:
            study.tell(asked, state=optuna.trial.TrialState.FAIL)
        else:
            study.tell(asked, seen[value])


def settle(runner: Runner, state: TuneState, knob: Knob, group: Sequence[Trial]) -> Trial | None:
    """Keep the fastest accepted value of the knob into `state` (returned; None when none was
    accepted); the other accepted ones become rejected. Every trial of `group` is saved."""
    accepted = [t for t in group if t.status == ACCEPTED]
    winner = min(accepted, key=lambda t: t.ratio) if accepted else None
    for trial in accepted:
        if trial is not winner:
            trial.status = REJECTED
            trial.reason = f"faster ({speed(trial.ratio)}), but {knob.name}={winner.value!r} was faster still"
    if winner is not None:
        winner.status = KEPT
        state.kept.update(winner.knobs)  # the knob and what its fix set with it
        state.best = winner
        if not (winner.numerics or {}).get("checked"):
            state.unchecked_kept.append(knob.name)
    for trial in group:
        runner.save(trial)
    if runner.setup.progress and group:
        runner.setup.progress.knob_settled(knob.name, winner, state.best)
    return winner


def _values(span: IntRange) -> set[int]:
    return set(range(span.low, span.high + 1))
