"""The search: baseline, then one knob at a time on top of what was kept.

For each candidate knob (order: `torchdoctor.tune.candidates`), checked with `applies` against the
best run so far (in up to PASSES passes, the second retrying what the first did not keep on
top of what it kept, except knobs already tried on top of the same kept set): bool knobs get one trial, choice knobs one per choice, integer knobs an Optuna
ask/tell search over their range (the knob's first guess enqueued first). A trial is accepted
when `compare_samples(best, trial)` says "faster", the numerics check against the baseline passes
and the script did not undo the knob; the fastest accepted value of a knob is kept. The search
stops after `max_trials`, before a trial that would overrun `time_budget_s`, on diminishing returns
(`patience` knobs in a row improving the best by less than `min_gain`), or on a stop (Ctrl-C,
SIGTERM, SIGHUP: the running trial is interrupted, or `stop_signal()` says one arrived between
trials): the trials so far are kept and reported, and the result's `exit_status` is 128 + the signal.
"""

from __future__ import annotations

import signal
import time
from pathlib import Path
from typing import Any, Callable, Protocol, Sequence

import optuna

from torchdoctor.bench import FASTER, compare_samples
from torchdoctor.knobs import REGISTRY, IntRange, Knob
from torchdoctor.record import Record, new_run_id
from torchdoctor.tune.candidates import ordered_candidates
from torchdoctor.tune.config import TuneConfig
from torchdoctor.tune.errors import BaselineFailedError, TuneInterruptedError
from torchdoctor.tune.numerics import check_losses
from torchdoctor.tune.result import TuneResult
from torchdoctor.tune.trial import BASELINE, FAILED, INTERRUPTED, KEPT, REJECTED, Trial, run_trial


#: Passes over the candidates. Knobs interact (DataLoader workers and intra-op threads share the
#: cores), so a knob rejected before another was kept is tried once more on top of it.
PASSES = 2

#: A script whose loss differs run to run at baseline gets a numerics tolerance of at least this
#: many times that difference: a knob cannot be asked to be more repeatable than the script.
NOISE_MARGIN = 3.0


class TuneProgress(Protocol):
    def trial_started(self, index: int, label: str) -> None: ...
    def trial_finished(self, trial: Trial, best: Trial) -> None: ...


class TrialStore(Protocol):
    """Where trials are kept as they finish (`torchdoctor.store.RunStore` is one)."""

    def save(self, record: Record) -> None: ...
    def save_trial(self, tune_id: str, trial: int, *, run_id: str | None, knobs: dict[str, Any], verdict: str,
                   reason: str, figures: dict[str, Any]) -> None: ...


class _Interrupted(Exception):
    """A trial was stopped by a signal, or one arrived between trials."""


class Tuner:
    def __init__(self, script: str | Path, args: Sequence[str], config: TuneConfig, *, store: TrialStore,
                 work_dir: Path, progress: TuneProgress | None = None,
                 stop_signal: Callable[[], int | None] = lambda: None) -> None:
        """`stop_signal()`: the stop signal torchdoctor received, if any (observe.stops.StopLog.first)."""
        self.script, self.args, self.config = Path(script), list(args), config
        self.store, self.work_dir, self.progress = store, Path(work_dir), progress
        self.stop_signal = stop_signal
        self.exit_status = 0
        self.tune_id = "tune-" + new_run_id()
        self.trials: list[Trial] = []
        self.kept: dict[str, Any] = {}
        self.stop_reason = "every applicable knob was tried"
        self._start = time.perf_counter()
        self._no_gain = 0
        self.repeat: Trial | None = None
        self.loss_noise: float | None = None  # relative mean-loss difference of two baseline runs
        self._tried_on: dict[str, dict[str, Any]] = {}  # knob -> the kept knobs it was last tried on
        optuna.logging.set_verbosity(optuna.logging.WARNING)

    # -- the loop ------------------------------------------------------------------------------
    def run(self) -> TuneResult:
        try:
            baseline = self._run({}, None, diagnose=True)
        except _Interrupted:
            raise TuneInterruptedError(f"interrupted ({self._stopped_by()}) during the baseline run: nothing to "
                                       "report", exit_code=self.exit_status) from None
        if baseline.status != BASELINE:
            raise BaselineFailedError(f"the baseline run failed ({baseline.reason}); fix the script first")
        self.baseline = self.best = baseline
        if self.progress:
            self.progress.trial_finished(baseline, baseline)
        order = ordered_candidates(baseline.record, allow_batch_size=self.config.allow_batch_size,
                                   only=self.config.only)
        try:
            if self.config.repeat_baseline:
                self._repeat_baseline()
            for _ in range(PASSES):
                kept_before = dict(self.kept)
                self._pass([name for name in order if name not in self.kept])
                if self.kept == kept_before or self._stop_now():
                    break
        except (KeyboardInterrupt, _Interrupted):
            self.stop_reason = f"interrupted ({self._stopped_by()}): best so far reported"
        return TuneResult.build(tune_id=self.tune_id, script=self.script, args=self.args, baseline=self.baseline,
                                best=self.best, repeat=self.repeat, loss_noise=self.loss_noise, kept=self.kept,
                                trials=self.trials, stop_reason=self.stop_reason, exit_status=self.exit_status)

    def _stopped_by(self) -> str:
        """The stop's signal name; sets `exit_status` to 128 + it (SIGINT when none was logged)."""
        signum = self.stop_signal() or signal.SIGINT
        self.exit_status = 128 + signum
        return "Ctrl-C" if signum == signal.SIGINT else signal.Signals(signum).name

    def _repeat_baseline(self) -> None:
        """Run the baseline again: its difference from the first run is the script's own noise.
        The mean-loss difference widens every knob's numerics tolerance (x NOISE_MARGIN)."""
        repeat = self._run({}, None)  # raises _Interrupted when it was
        if repeat.status != BASELINE:
            repeat.reason = f"baseline repeat failed ({repeat.reason}): run-to-run noise not measured"
        else:
            self.repeat = repeat
            check = check_losses([s.loss for s in self.baseline.record.steps],
                                 [s.loss for s in repeat.record.steps], 0.0)
            self.loss_noise = check.difference if check.checked else None
            repeat.reason = ("run-to-run noise: mean loss differs by "
                             f"{self.loss_noise:.3%}" if self.loss_noise is not None else "no loss recorded")
        if self.progress:
            self.progress.trial_finished(repeat, self.best)

    def _pass(self, names: list[str]) -> None:
        for name in names:
            if self._stop_now():
                return
            knob = REGISTRY[name]
            if self._tried_on.get(name) == self.kept:  # tried after the last kept knob: same trial again
                continue
            if knob.applies(self.best.record):
                self._tune_knob(knob)

    def _stop_now(self) -> bool:
        config = self.config
        if sum(t.knob is not None for t in self.trials) >= config.max_trials:
            self.stop_reason = f"--max-trials {config.max_trials} reached"
        elif config.time_budget_s is not None and (time.perf_counter() - self._start + self.trials[-1].duration_s
                                                   > config.time_budget_s):
            self.stop_reason = f"--time-budget {config.time_budget_s:.0f} s reached"
        elif self._no_gain >= config.patience:
            self.stop_reason = (f"diminishing returns: {config.patience} knobs in a row improved the step "
                                f"by less than {config.min_gain:.0%}")
        else:
            return False
        return True

    def _tune_knob(self, knob: Knob) -> None:
        before = self.best
        self._tried_on[knob.name] = dict(self.kept)
        group: list[Trial] = []
        try:
            if knob.kind == "int":
                self._search_int(knob, group)
            else:
                for value in knob.choices(self.best.record):
                    if self._stop_now():
                        break
                    group.append(self._try(knob, value))
        finally:
            self._settle(knob, group)
        gain = 1.0 - self._time(self.best, knob) / self._time(before, knob) if self.best is not before else 0.0
        self._no_gain = 0 if gain >= self.config.min_gain else self._no_gain + 1

    def _search_int(self, knob: Knob, group: list[Trial]) -> None:
        span = knob.int_range(self.best.record)
        study = optuna.create_study(direction="minimize",
                                    sampler=optuna.samplers.TPESampler(seed=self.config.seed, n_startup_trials=1))
        study.enqueue_trial({knob.name: span.first})
        distribution = {knob.name: optuna.distributions.IntDistribution(span.low, span.high)}
        seen: dict[int, float | None] = {}
        if knob.current(self.best.record) is not None:  # what the best run already measured
            seen[knob.current(self.best.record)] = self._time(self.best, knob)
        for _ in range(self.config.int_trials * 4):  # bounded even if Optuna keeps proposing known values
            if len(group) >= self.config.int_trials or self._stop_now() or len(set(seen) & _values(span)) > span.high - span.low:
                break
            asked = study.ask(distribution)
            value = asked.params[knob.name]
            if value not in seen:
                trial = self._try(knob, value)
                group.append(trial)
                seen[value] = trial.sample_s if knob.per_sample else trial.step_s
                if trial.status == REJECTED and trial.numerics and not trial.numerics["ok"]:
                    seen[value] = None
            if seen[value] is None:
                study.tell(asked, state=optuna.trial.TrialState.FAIL)
            else:
                study.tell(asked, seen[value])

    # -- one trial -------------------------------------------------------------------------------
    def _run(self, knobs: dict[str, Any], knob: str | None, *, diagnose: bool = False) -> Trial:
        if self.stop_signal() is not None:  # arrived between trials: start no other
            raise _Interrupted()
        index = len(self.trials)
        label = "baseline" if knob is None else f"{knob}={knobs[knob]!r}"
        if self.progress:
            self.progress.trial_started(index, label)
        trial = run_trial(self.script, self.args, knobs, self.config, index=index, knob=knob,
                          out_dir=self.work_dir / self.tune_id / f"trial{index}", diagnose=diagnose)
        self.trials.append(trial)
        if trial.record is not None and trial.status != INTERRUPTED:
            self.store.save(trial.record)
        if knob is None:
            self._save(trial)
        if knob is None and trial.status == INTERRUPTED:
            raise _Interrupted()
        return trial

    def _try(self, knob: Knob, value: Any) -> Trial:
        trial = self._run({**self.kept, knob.name: value}, knob.name)
        if trial.status == INTERRUPTED:
            self._save(trial)  # not in the knob's group yet: kept in the store here
            raise _Interrupted()
        if trial.status != FAILED:
            self._judge(trial, knob)
        if self.progress:
            self.progress.trial_finished(trial, self.best)
        return trial

    def _judge(self, trial: Trial, knob: Knob) -> None:
        tolerance = max(knob.loss_rtol, NOISE_MARGIN * (self.loss_noise or 0.0))
        numerics = check_losses([s.loss for s in self.baseline.record.steps],
                                [s.loss for s in trial.record.steps], tolerance)
        reference = self.best.times(knob.per_sample)
        if self.best is self.baseline and self.repeat is not None:  # both baseline runs: the fairer sample
            reference += self.repeat.times(knob.per_sample)
        verdict = compare_samples(reference, trial.times(knob.per_sample),
                                  min_effect=self.config.min_effect, seed=self.config.seed)
        trial.numerics, trial.verdict = numerics.to_dict(), verdict.to_dict()
        trial.status = REJECTED
        if not numerics.ok:
            trial.reason = f"numerics: {numerics.reason}"
        elif trial.overridden:
            trial.reason = f"overridden by the script: {trial.overridden}"
        elif verdict.verdict != FASTER:
            trial.reason = f"{verdict.verdict} (x{1 / verdict.ratio:.3f})"
        else:
            trial.status, trial.reason = KEPT, f"faster (x{1 / verdict.ratio:.3f}); {numerics.reason}"

    def _settle(self, knob: Knob, group: list[Trial]) -> None:
        """Keep the fastest accepted value of the knob; the other accepted ones become rejected."""
        accepted = [t for t in group if t.status == KEPT]
        if accepted:
            winner = min(accepted, key=lambda t: self._time(t, knob))
            for trial in accepted:
                if trial is not winner:
                    trial.status = REJECTED
                    trial.reason = f"faster, but {knob.name}={winner.value!r} was faster still"
            self.kept[knob.name] = winner.value
            self.best = winner
        for trial in group:
            self._save(trial)

    def _time(self, trial: Trial, knob: Knob) -> float:
        value = trial.sample_s if knob.per_sample else trial.step_s
        return value if value is not None else float("inf")

    def _save(self, trial: Trial) -> None:
        self.store.save_trial(self.tune_id, trial.index, run_id=trial.run_id, knobs=trial.knobs,
                              verdict=trial.status, reason=trial.reason, figures=trial.figures())


def _values(span: IntRange) -> set[int]:
    return set(range(span.low, span.high + 1))
