"""The search: baseline, then one knob at a time on top of what was kept, each value judged side
by side, then a confirmation of the whole.

1. Baseline: the script without knobs, profiled and diagnosed (the findings order the knobs),
   then run again (unless `repeat_baseline` is off): the runs' difference is the script's own
   noise. When they disagree by more than `run_tolerance` (one was disturbed), the baseline is
   re-measured until two runs agree, up to `max_rounds` runs; if none do, the machine is too
   noisy to decide anything: the search says so and keeps nothing.
2. Each knob value is a trial: runs of the best configuration so far (A) and of the candidate
   (B) interleaved A B B A for `rounds` rounds (a run of A that just ran is reused as the first
   A), more rounds while runs of one side disagree (up to `max_rounds`), judged by
   `torchdoctor.bench.compare_runs` (paired: the median of the rounds' ratios, each A run against
   the B run next to it, so that the machine's moves cancel within a round; run-to-run spread as
   noise floor).
   Nothing is divided by a run made minutes earlier. A value is accepted when it is faster, its
   numerics pass against the baseline (`torchdoctor.tune.numerics`; a precision- or
   compile-changing knob must have been checked) and the script did not undo it; the fastest
   accepted value of a knob is kept.
3. Order: knobs named by the findings first, by decreasing upside (`torchdoctor.tune.candidates`);
   bool knobs one trial, choice knobs one per choice, integer knobs an Optuna ask/tell search.
   Two passes (the second retries what the first did not keep on top of what it kept).
4. Stops on `max_trials`, when the budget leaves no room for another trial and the confirmation,
   on diminishing returns (`patience` knobs in a row not kept or gaining less than `min_gain`,
   only once every knob the findings name was tried), or on a stop signal (Ctrl-C, SIGTERM,
   SIGHUP: the running run is interrupted, or `stop_signal()` says one arrived between runs): the
   trials so far are kept and reported, and the result's `exit_status` is 128 + the signal. A stop
   during the first baseline run leaves nothing to report (TuneInterruptedError).
5. Confirmation: baseline and best configuration interleaved for `confirm_rounds` rounds, and
   more (up to `confirm_max_rounds`, budget permitting) until the speed-up is precise within
   `confirm_precision` (bootstrap CI and run-to-run scatter) and its runs lasted `confirm_span_s`
   in all (the machine's minute-to-minute moves averaged in): the claim is what a user re-running
   the two configurations should find. The reported speed-up is that ratio with its 95% CI. Not
   faster, or too noisy to tell: nothing is kept. A stop before or during it: the result is
   reported as unconfirmed.
"""

from __future__ import annotations

import math
import signal
import statistics
import time
from pathlib import Path
from typing import Any, Callable, Protocol, Sequence

import optuna

from torchdoctor.bench import FASTER, RunsVerdict, agreeing_runs, compare_runs, t_quantile_95
from torchdoctor.knobs import REGISTRY, IntRange, Knob
from torchdoctor.observe import STEPS_ONLY_SOURCES
from torchdoctor.record import Record, new_run_id
from torchdoctor.tune.candidates import findings_of, named_knobs, ordered_candidates
from torchdoctor.tune.claims import check_claims
from torchdoctor.tune.config import CONFIRM_MAX_STEPS, TuneConfig
from torchdoctor.tune.errors import BaselineFailedError, TuneInterruptedError
from torchdoctor.tune.numerics import (NOISE_MARGIN, NumericsCheck, check_losses, check_outputs,
                                       distribution_difference, losses_identical, sampling_tolerance, unchecked)
from torchdoctor.tune.result import TuneResult
from torchdoctor.tune.trial import (ACCEPTED, BASELINE_RUN, CANDIDATE, CONFIRM_BASELINE, CONFIRM_BEST,
                                    FAILED, INTERRUPTED, KEPT, REFERENCE, REJECTED, Run, Trial, observe_run,
                                    interval_source, speedup_interval)

#: Passes over the candidates. Knobs interact (DataLoader workers and intra-op threads share the
#: cores), so a knob rejected before another was kept is tried once more on top of it.
PASSES = 2

__all__ = ["NOISE_MARGIN", "PASSES", "TuneProgress", "Tuner"]


class TuneProgress(Protocol):
    def trial_started(self, index: int, label: str) -> None: ...
    def run_started(self, label: str, role: str) -> None: ...
    def trial_finished(self, trial: Trial, best: Trial) -> None: ...
    def knob_settled(self, knob: str, kept: Trial | None, best: Trial) -> None: ...
    def confirmation_finished(self, confirmation: dict[str, Any]) -> None: ...


class TrialStore(Protocol):
    """Where trials are kept as they finish (`torchdoctor.store.RunStore` is one)."""

    def save(self, record: Record) -> None: ...
    def save_trial(self, tune_id: str, trial: int, *, run_id: str | None, knobs: dict[str, Any], verdict: str,
                   reason: str, figures: dict[str, Any]) -> None: ...


class _Interrupted(Exception):
    """A run was stopped by a signal, or one arrived between runs."""


def _ms(seconds: float | None) -> str:
    return f"{seconds * 1e3:.3g} ms" if seconds else "n/a"


def _speed(ratio: float) -> str:
    return f"x{1 / ratio:.2f}" if ratio and ratio == ratio else "x?"


def _speed_ci(verdict: dict[str, Any]) -> str:
    ci = speedup_interval(verdict)
    return f"95% CI x{ci[0]:.2f}-x{ci[1]:.2f}" if ci else "no CI (too few steps)"


class Tuner:
    def __init__(self, script: str | Path, args: Sequence[str], config: TuneConfig, *, store: TrialStore,
                 work_dir: Path, progress: TuneProgress | None = None,
                 stop_signal: Callable[[], int | None] = lambda: None) -> None:
        """`stop_signal()`: the stop signal torchdoctor received, if any (launch.stops.StopLog.first)."""
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
        self._outcomes: list[str] = []  # what each knob tried came to, for the stop reason
        self._considered: set[str] = set()
        self.named: list[str] = []  # knobs the findings name, tried before any stop rule but the limits
        self.runs: list[Run] = []
        self._last: Run | None = None  # the run that ran last (adjacent in time to the next)
        self._pending: tuple[list[Run], list[Run]] = ([], [])  # the runs of A and B being interleaved
        self._pending_paired = False  # their k-th runs ran one right after the other (_interleave)
        self.loss_noise: float | None = None  # relative mean-loss difference of two baseline runs
        self.output_noise: float | None = None  # output distribution difference of two baseline runs
        self.deterministic: bool | None = None  # the baseline repeated identically (None: not measured)
        self.noisy: str | None = None  # why nothing could be decided, when so
        # Timed steps of the trials' runs (set from the baseline's pace): the confirmation's window
        # (TuneConfig.confirm_steps), so that a trial and the confirmation measure a short step alike.
        self.trial_steps = self.config.timing_steps
        self.confirmation: dict[str, Any] | None = None
        self.unchecked_kept: list[str] = []
        self._tried_on: dict[str, dict[str, Any]] = {}  # knob -> the kept knobs it was last tried on
        optuna.logging.set_verbosity(optuna.logging.WARNING)

    # -- the loop ------------------------------------------------------------------------------
    def run(self) -> TuneResult:
        try:
            first = self._observe({}, BASELINE_RUN, diagnose=True)
        except _Interrupted:
            raise TuneInterruptedError(f"interrupted ({self._stopped_by()}) during the baseline run: nothing to "
                                       "report", exit_code=self.exit_status) from None
        if not first.ok:
            raise BaselineFailedError(f"the baseline run failed ({first.failure[1]}); fix the script first")
        # The baseline carries its diagnosis: it orders the knobs, and a knob's search starts where its
        # finding's fix points (num_workers: the count TD-DATA-002/007 name).
        first.record.findings = findings_of(first.record)
        self.baseline = self.best = Trial(index=0, knob=None, value=None, knobs={}, runs=[first])
        if self.config.repeat_baseline:  # a repeat times that window: the numerics' reference
            self.trial_steps = self.config.confirm_steps(first.step_s)
        self.trials.append(self.baseline)
        order = ordered_candidates(first.record, allow_batch_size=self.config.allow_batch_size,
                                   only=self.config.only)
        self.named = [n for n in named_knobs(first.record) if n in order]
        interrupted = False
        try:
            try:
                if self.config.repeat_baseline:
                    self._measure_baseline()
            finally:
                self._finish_baseline()
            for _ in range(PASSES):
                kept_before = dict(self.kept)
                self._pass([name for name in order if name not in self.kept])
                if self.kept == kept_before or self._stop_now():
                    break
        except (KeyboardInterrupt, _Interrupted):
            interrupted = True
            self.stop_reason = f"interrupted ({self._stopped_by()}): best so far reported, unconfirmed"
        if self.noisy and not self.kept and not interrupted:
            self.stop_reason = (f"the machine is too noisy to decide anything within the budget: {self.noisy}; "
                                f"nothing kept (the search: {self.stop_reason})")
        if self.kept:
            if interrupted:
                self._unconfirmed(f"the search was interrupted ({self._stopped_by()}) before the confirmation")
            else:
                try:
                    self._confirm()
                except (KeyboardInterrupt, _Interrupted):
                    stopped_by = self._stopped_by()
                    self._unconfirmed(f"the confirmation was interrupted ({stopped_by})")
                    self.stop_reason += f"; confirmation interrupted ({stopped_by}): result unconfirmed"
        claims = check_claims(findings_of(first.record), self.trials, considered=self._considered, candidates=order)
        return TuneResult.build(tune_id=self.tune_id, script=self.script, args=self.args, baseline=self.baseline,
                                best=self.best, kept=self.kept, trials=self.trials, stop_reason=self.stop_reason,
                                confirmation=self.confirmation, noise=self._noise(),
                                unchecked=self.unchecked_kept, exit_status=self.exit_status, findings=claims)

    def _stopped_by(self) -> str:
        """The stop's signal name; sets `exit_status` to 128 + it (SIGINT when none was logged)."""
        signum = self.stop_signal() or signal.SIGINT
        self.exit_status = 128 + signum
        return "Ctrl-C" if signum == signal.SIGINT else signal.Signals(signum).name

    # -- the baseline ------------------------------------------------------------------------------
    def _measure_baseline(self) -> None:
        """Run the baseline again: the two runs' difference is the script's own noise. When they
        disagree (one was disturbed), run it again until two agree (or give up: too noisy)."""
        runs = self.baseline.runs
        while True:
            repeat = self._observe({}, BASELINE_RUN, timing_steps=self.trial_steps)
            if not repeat.ok:
                self.baseline.reason = f"baseline repeat failed ({repeat.failure[1]}): run-to-run noise not measured"
                return
            runs.append(repeat)
            windowed = self._trial_window(runs)
            if len(windowed) == 2:
                self._script_noise(windowed[0], windowed[1])
            medians = [r.step_s or float("inf") for r in runs]
            agree = agreeing_runs(medians, self.config.run_tolerance)
            for index, run in enumerate(runs):
                run.disturbed = index not in agree
            # A majority corroborates, and two runs timed the trials' window (the numerics' reference).
            if len(agree) >= 2 and len(agree) > len(runs) / 2 and len(windowed) >= 2:
                return
            if len(runs) >= max(self.config.max_rounds, 3) or not self._room(1):
                # Go on: only effects larger than this noise (every run beyond every other) can be
                # decided now; if none is, the result says the machine was too noisy.
                self.noisy = (f"{len(runs)} runs of the unmodified script measured "
                              f"{', '.join(_ms(m) for m in medians)} per step, no majority of them within "
                              f"{self.config.run_tolerance:.0%} of each other")
                return

    def _trial_window(self, runs: list[Run]) -> list[Run]:
        """`runs` that timed the trials' window: those whose losses and outputs (sampled after the
        window) a trial's can be compared with, step for step."""
        return [r for r in runs if r.ok and r.timing_steps == self.trial_steps]

    def _script_noise(self, first: Run, repeat: Run) -> None:
        """Loss and output differences between two baseline runs, and whether they are identical."""
        check = check_losses(first.losses(), repeat.losses(), 0.0)
        self.loss_noise = check.difference if check.checked else None
        if check.checked:
            self.deterministic = losses_identical(first.losses(), repeat.losses())
        elif first.outputs and repeat.outputs:
            count = min(len(first.outputs), len(repeat.outputs))
            self.output_noise = distribution_difference(first.outputs[:count], repeat.outputs[:count])
            self.deterministic = all(
                bool((a["sample"] == b["sample"]).all()) for a, b in zip(first.outputs, repeat.outputs))

    def _finish_baseline(self) -> None:
        runs = self.baseline.runs
        if not self.baseline.reason:
            parts = [f"{len(runs)} run(s): {', '.join(_ms(r.step_s) for r in runs)} per step"]
            if any(r.disturbed for r in runs):
                parts.append(f"{sum(r.disturbed for r in runs)} run(s) disagree with the others (disturbed)")
            if self.loss_noise is not None:
                parts.append(f"run to run the mean loss differs by {self.loss_noise:.3%}")
            if self.deterministic:
                parts.append("the script repeats identically (numerics compared step by step)")
            self.baseline.reason = "; ".join(parts)
        self._save(self.baseline)
        if self.progress:
            self.progress.trial_finished(self.baseline, self.baseline)

    # -- candidates --------------------------------------------------------------------------------
    def _pass(self, names: list[str]) -> None:
        for name in names:
            if self._stop_now():
                return
            knob = REGISTRY[name]
            if self._tried_on.get(name) == self.kept:  # tried after the last kept knob: same trial again
                continue
            self._considered.add(name)
            if knob.applies(self.best.record):
                self._tune_knob(knob)

    def _stop_now(self) -> bool:
        config = self.config
        if sum(t.knob is not None for t in self.trials) >= config.max_trials:
            self.stop_reason = f"--max-trials {config.max_trials} reached"
        elif not self._room(self._trial_runs()):
            self.stop_reason = (f"--time-budget {config.time_budget_s:.0f} s: no room for another trial and the "
                                "confirmation")
        elif self._no_gain >= config.patience and set(self.named) <= self._considered:
            recent = "; ".join(self._outcomes[-config.patience:])
            self.stop_reason = (f"diminishing returns: none of the last {config.patience} knobs tried gained "
                                f"{config.min_gain:.0%} or more ({recent})")
        else:
            return False
        return True

    def _tune_knob(self, knob: Knob) -> None:
        self._tried_on[knob.name] = dict(self.kept)
        group: list[Trial] = []
        try:
            if knob.kind == "int":
                self._search_int(knob, group)
            else:
                for value in knob.choices(self.best.record):
                    if group and self._stop_now():
                        break
                    group.append(self._try(knob, value))
        finally:
            winner = self._settle(knob, group)
        gain = 1.0 - winner.ratio if winner is not None and winner.ratio else 0.0
        self._no_gain = 0 if gain >= self.config.min_gain else self._no_gain + 1
        if winner is not None:
            self._outcomes.append(f"{knob.name}: kept, {_speed(winner.ratio)}")
        elif group:
            best_try = min(group, key=lambda t: t.ratio if t.ratio else float("inf"))
            self._outcomes.append(f"{knob.name}: not kept, {best_try.reason.split(';')[0]}")

    def _search_int(self, knob: Knob, group: list[Trial]) -> None:
        span = knob.int_range(self.best.record)
        study = optuna.create_study(direction="minimize",
                                    sampler=optuna.samplers.TPESampler(seed=self.config.seed, n_startup_trials=1))
        study.enqueue_trial({knob.name: span.first})
        distribution = {knob.name: optuna.distributions.IntDistribution(span.low, span.high)}
        seen: dict[int, float | None] = {}
        if knob.current(self.best.record) is not None:  # what the best run already measures: ratio 1
            seen[knob.current(self.best.record)] = 1.0
        for _ in range(self.config.int_trials * 4):  # bounded even if Optuna keeps proposing known values
            if len(group) >= self.config.int_trials or (group and self._stop_now()) \
                    or len(set(seen) & _values(span)) > span.high - span.low:
                break
            asked = study.ask(distribution)
            value = asked.params[knob.name]
            if value not in seen:
                trial = self._try(knob, value)
                group.append(trial)
                numerics_failed = trial.numerics is not None and not trial.numerics["ok"]
                seen[value] = None if trial.status == FAILED or numerics_failed or not trial.ratio else trial.ratio
            if seen[value] is None:
                study.tell(asked, state=optuna.trial.TrialState.FAIL)
            else:
                study.tell(asked, seen[value])

    # -- runs ------------------------------------------------------------------------------------
    def _observe(self, knobs: dict[str, Any], role: str, *, diagnose: bool = False,
                 timing_steps: int | None = None, steps_only: bool = False) -> Run:
        """One run of the script with `knobs` (`timing_steps` timed, the config's unless given;
        `steps_only`: by the step hooks alone), stored. Raises _Interrupted when a stop signal
        arrived before it (start no other) or interrupted it."""
        if self.stop_signal() is not None:
            raise _Interrupted()
        if self.progress:
            label = ", ".join(f"{k}={v!r}" for k, v in knobs.items()) or "no knobs"
            self.progress.run_started(label, role)
        run = observe_run(self.script, self.args, knobs, self.config, role=role, diagnose=diagnose,
                          out_dir=self.work_dir / self.tune_id / f"run{len(self.runs)}", timing_steps=timing_steps,
                          steps_only=steps_only)
        self.runs.append(run)
        self._last = run
        if run.failure and run.failure[0] == INTERRUPTED:
            raise _Interrupted()
        if run.record is not None:
            self.store.save(run.record)
        return run

    def _run_estimate(self) -> float:
        """A run's expected duration: the median of the timing-only runs. The first run (the
        baseline, profiled and diagnosed besides) is left out once another exists: of two runs the
        median is their mean, and a 190 ms-step script's search once ended after its baselines
        with 190 s of its 240 s budget unused."""
        durations = [r.duration_s for r in self.runs[1:]] or [r.duration_s for r in self.runs]
        return statistics.median(durations) if durations else 0.0

    def _trial_runs(self) -> int:
        """Runs a trial takes at least (its first A is usually the run that just ran)."""
        return 2 * self.config.rounds - 1

    def _room(self, runs: int, *, confirmation: bool = True) -> bool:
        """Whether `runs` more runs, and the confirmation (reserved), fit in the time budget;
        `confirmation` False: the runs are the confirmation's own (nothing is left to reserve)."""
        budget = self.config.time_budget_s
        if budget is None:
            return True
        estimate = self._run_estimate()
        confirming = estimate + self.config.confirm_window_s  # its windows may be that much longer
        reserve = max(2 * self.config.confirm_rounds * confirming, self.config.confirm_span_s) if confirmation else 0.0
        elapsed = max(time.perf_counter() - self._start, sum(r.duration_s for r in self.runs))
        return elapsed + runs * (estimate if confirmation else confirming) + reserve <= budget

    def _interleave(self, a_knobs: dict[str, Any], b_knobs: dict[str, Any], roles: tuple[str, str], *,
                    rounds: int, max_rounds: int, per_sample: bool, confirmation: bool = False,
                    first_b: Callable[[Run], bool] | None = None, precision: float | None = None,
                    steps: tuple[int | None, int | None] = (None, None), min_span_s: float = 0.0,
                    steps_only: bool = False) -> tuple[list[Run], list[Run], RunsVerdict | None]:
        """Runs of A and B interleaved A B B A ... for `rounds` rounds, more (up to `max_rounds`)
        while runs of one side disagree or, given `precision`, while the ratio's 95% uncertainty
        is wider than that (RunsVerdict.half_width), or while the runs last less than `min_span_s`
        in all (_span). `steps`: each side's timed steps (None: the config's); `steps_only`: every
        run observed by the step hooks alone. The run that just ran is reused when it is A's (or
        B's) configuration with that window, observed alike. `first_b(run)` may stop early (False)
        once B has run once (numerics). Stops at B's first failed run."""
        a_runs: list[Run] = []
        b_runs: list[Run] = []
        pattern = "ABBA"
        a_steps, b_steps = (n or self.config.timing_steps for n in steps)
        last = self._last
        reusable = last is not None and last.ok and not last.disturbed and last.steps_only == steps_only
        if reusable and last.knobs == a_knobs and last.timing_steps == a_steps:
            a_runs.append(last)
        elif reusable and last.knobs == b_knobs and last.timing_steps == b_steps:
            b_runs.append(last)
            pattern = "BAAB"
        position = len(a_runs) + len(b_runs)
        self._pending = (a_runs, b_runs)
        self._pending_paired = True  # the rounds' runs k of A and B: positions 2k and 2k + 1
        target = rounds
        while True:
            while len(a_runs) + len(b_runs) < 2 * target:
                side = pattern[position % 4]
                position += 1
                run = self._observe(a_knobs if side == "A" else b_knobs, roles[0] if side == "A" else roles[1],
                                    timing_steps=a_steps if side == "A" else b_steps, steps_only=steps_only)
                if side == "A":
                    if run.ok:
                        a_runs.append(run)
                    else:  # the rounds shift by one run: no longer paired
                        self._pending_paired = False
                    continue
                b_runs.append(run)
                if not run.ok:
                    return a_runs, b_runs, None
                if len(b_runs) == 1 and first_b is not None and not first_b(run):
                    return a_runs, b_runs, None
            verdict = compare_runs([r.times(per_sample) for r in a_runs], [r.times(per_sample) for r in b_runs],
                                   min_effect=self.config.min_effect, tolerance=self.config.run_tolerance,
                                   seed=self.config.seed,
                                   paired=self._pending_paired and len(a_runs) == len(b_runs))
            for side_runs, kept in ((a_runs, verdict.a_kept), (b_runs, verdict.b_kept)):
                for index, run in enumerate(side_runs):
                    run.disturbed = index not in kept
            settled = (verdict.decided and (precision is None or verdict.half_width <= precision)
                       and _span(a_runs + b_runs) >= min_span_s)
            if settled or target >= max_rounds or not self._room(2, confirmation=not confirmation):
                return a_runs, b_runs, verdict
            target += 1

    # -- one trial -------------------------------------------------------------------------------
    def _try(self, knob: Knob, value: Any) -> Trial:
        trial = Trial(index=len(self.trials), knob=knob.name, value=value, knobs={**self.kept, knob.name: value},
                      status=REJECTED)
        self.trials.append(trial)
        if self.progress:
            self.progress.trial_started(trial.index, f"{knob.name}={value!r}")
        per_sample = knob.per_sample or any(REGISTRY[n].per_sample for n in self.kept)
        try:
            a_runs, b_runs, verdict = self._interleave(
                dict(self.kept), trial.knobs, (REFERENCE, CANDIDATE), rounds=self.config.rounds,
                max_rounds=self.config.max_rounds, per_sample=per_sample,
                steps=(self.trial_steps, self.trial_steps), first_b=lambda run: self._first_checks(trial, knob, run))
        except (_Interrupted, KeyboardInterrupt):
            trial.reference, trial.runs = self._pending
            trial.status, trial.reason = INTERRUPTED, f"interrupted ({self._stopped_by()})"
            self._save(trial)
            raise
        trial.reference, trial.runs = a_runs, b_runs
        self._judge(trial, knob, verdict)
        if self.progress:
            self.progress.trial_finished(trial, self.best)
        return trial

    def _first_checks(self, trial: Trial, knob: Knob, run: Run) -> bool:
        """After the candidate's first run: numerics and whether the script undid the knob.
        False stops the trial (no speed measurement can change a wrong result)."""
        trial.overridden = knob.overridden(trial.value, run.record)
        numerics = self._numerics(knob, run)
        trial.numerics = numerics.to_dict()
        return numerics.ok and not trial.overridden

    def _numerics(self, knob: Knob, run: Run) -> NumericsCheck:
        """`run` (every knob kept so far plus `knob`) against a run of the best configuration so far
        (every knob kept so far: the baseline until one is), so that each knob answers for its own
        change under its own tolerance: against the baseline, a kept bf16 autocast's 4.1% on the
        loss (within its 5%) failed every later knob's 0.1% (tune_zoo, session 31: `optimizer_impl`
        rejected on the tiny-ops script for the kept knob's difference). The data stream counts as
        changed when any knob the run applies changes it: a knob tried on top of kept workers sees
        other batches than the baseline did, whatever it does itself (`prefetch_factor` beside a kept
        `persistent_workers` was rejected for a 58% per-step loss difference that was the kept
        knob's other shuffles, on a script that repeats identically)."""
        base = next(iter(self._trial_window(self.best.runs) or self._trial_window(self.baseline.runs)),
                     self.baseline.runs[0])
        losses, base_losses = run.losses(), base.losses()
        count = min(len(losses), len(base_losses))  # the steps both timed (a script may end sooner)
        losses, base_losses = losses[:count], base_losses[:count]
        if any(v is not None for v in losses) and any(v is not None for v in base_losses):
            stream_changed = any(REGISTRY[name].changes_data_stream for name in run.knobs)
            if self.deterministic and not stream_changed:
                return check_losses(base_losses, losses, knob.loss_rtol, step_by_step=True)
            tolerance = max(knob.loss_rtol, NOISE_MARGIN * (self.loss_noise or 0.0))
            if stream_changed:
                tolerance = max(tolerance, sampling_tolerance(base_losses))
            return check_losses(base_losses, losses, tolerance)
        if base.outputs and run.outputs:
            return check_outputs(base.outputs, run.outputs, knob.output_tolerance,
                                 min_agreement=knob.argmax_agreement, noise=self.output_noise)
        return unchecked("no loss and no model output recorded: numerics not checked")

    def _judge(self, trial: Trial, knob: Knob, verdict: RunsVerdict | None) -> None:
        numerics = trial.numerics or {}
        if verdict is not None:
            trial.verdict = verdict.to_dict()
            trial.ratio = verdict.verdict.ratio
        failed = next((r for r in trial.runs if not r.ok), None)
        if failed is not None:
            trial.status, trial.reason = FAILED, failed.failure[1]
        elif numerics and not numerics["ok"]:
            trial.reason = f"numerics: {numerics['reason']}"
        elif trial.overridden:
            trial.reason = f"overridden by the script: {trial.overridden}"
        elif verdict is None:
            trial.reason = "not measured"
        elif not verdict.decided:
            trial.reason = (f"undecided: runs of one configuration disagree (reference "
                            f"{_runs_text(verdict.a_means)}, candidate {_runs_text(verdict.b_means)}): "
                            "too noisy to decide")
        elif verdict.verdict.verdict != FASTER:
            how = _ranked(verdict) if verdict.separated else _trial_ci(verdict)
            trial.reason = f"{verdict.verdict.verdict}: {_speed(verdict.verdict.ratio)} side by side ({how})"
        elif not numerics.get("checked") and knob.changes_numerics and not self.config.accept_unchecked_numerics:
            trial.reason = (f"faster ({_speed(verdict.verdict.ratio)}) but "
                            f"{numerics.get('reason', 'numerics not checked')}: "
                            "a precision- or compile-changing knob is not kept unchecked "
                            "(--accept-unchecked-numerics keeps it)")
        else:
            trial.status = ACCEPTED
            how = _ranked(verdict) if verdict.separated else _trial_ci(verdict)
            trial.reason = f"faster side by side: {_speed(verdict.verdict.ratio)} ({how}); {numerics.get('reason', '')}"

    def _settle(self, knob: Knob, group: list[Trial]) -> Trial | None:
        """Keep the fastest accepted value of the knob; the other accepted ones become rejected."""
        accepted = [t for t in group if t.status == ACCEPTED]
        winner = min(accepted, key=lambda t: t.ratio) if accepted else None
        for trial in accepted:
            if trial is not winner:
                trial.status = REJECTED
                trial.reason = f"faster ({_speed(trial.ratio)}), but {knob.name}={winner.value!r} was faster still"
        if winner is not None:
            winner.status = KEPT
            self.kept[knob.name] = winner.value
            self.best = winner
            if not (winner.numerics or {}).get("checked"):
                self.unchecked_kept.append(knob.name)
        for trial in group:
            self._save(trial)
        if self.progress and group:
            self.progress.knob_settled(knob.name, winner, self.best)
        return winner

    # -- confirmation ------------------------------------------------------------------------------
    def _confirm(self) -> None:
        """Baseline and best configuration interleaved: the reported speed-up."""
        per_sample = any(REGISTRY[n].per_sample for n in self.kept)
        # Step times are all a confirmation reads: observed by the step hooks alone where they find
        # the steps (an optimizer's, or the script's markers) and no batch size is needed.
        baseline = self.baseline.record
        steps_only = not per_sample and baseline is not None and baseline.step_detection in STEPS_ONLY_SOURCES
        self.confirmation = {"status": "running", "runs": []}
        self._pending = ([], [])
        steps = (self.config.confirm_steps(_pace(self.baseline)), self.config.confirm_steps(_pace(self.best)))
        a_runs, b_runs, verdict = self._interleave(
            {}, dict(self.kept), (CONFIRM_BASELINE, CONFIRM_BEST), rounds=self.config.confirm_rounds,
            max_rounds=self.config.confirm_max_rounds, per_sample=per_sample, confirmation=True,
            precision=self.config.confirm_precision, steps=steps, min_span_s=self.config.confirm_span_s,
            steps_only=steps_only)
        self.confirmation = self._confirmation(a_runs, b_runs, verdict, per_sample, steps, steps_only)
        status = self.confirmation["status"]
        if status != "confirmed":
            why = self.confirmation["reason"]
            for trial in self.trials:
                if trial.status == KEPT:
                    trial.status, trial.reason = REJECTED, f"{trial.reason}; not confirmed: {why}"
                    self._save(trial)
            self.stop_reason += f"; not confirmed, nothing kept: {why}"
            self.kept = {}
            self.unchecked_kept = []
            self.best = self.baseline
        if self.progress:
            self.progress.confirmation_finished(self.confirmation)

    def _confirmation(self, a_runs: list[Run], b_runs: list[Run], verdict: RunsVerdict | None,
                      per_sample: bool, steps: tuple[int, int], steps_only: bool) -> dict[str, Any]:
        what = "sample" if per_sample else "step"
        span_s = _span(a_runs + b_runs)
        window = (f"{steps[0]} timed steps each" if steps[0] == steps[1] else
                  f"{steps[0]} timed steps a baseline run and {steps[1]} a kept-knobs run")
        if self.config.confirm_window_s:
            window += (f" (at least {self.config.confirm_window_s:g} s of steps, at most {CONFIRM_MAX_STEPS} steps for "
                       "it, or to the script's end)")
        paired = verdict is not None and verdict.paired
        verdict_dict = verdict.to_dict() if verdict else None
        statistic = ("the median of the rounds' ratios (each baseline run over the kept-knobs run next to it)"
                     if paired else "ratio of the medians")
        hooks = "timed by the step hooks alone" if steps_only else "timed with every observation hook (" + (
            "a speed-up per sample reads the batch sizes)" if per_sample else "the steps are not an optimizer's)")
        how = (f"{len(a_runs)} runs of the baseline and {len(b_runs)} of the kept knobs, interleaved (A B B A ...), "
               f"{window}, {hooks}; speed-up = {statistic} of the runs' "
               f"mean time per {what} (95% CI: {interval_source(verdict_dict)}; "
               "noise floor: the spread between runs "
               f"of one configuration; rounds added, up to {self.config.confirm_max_rounds}, until the speed-up's "
               f"95% uncertainty was within {self.config.confirm_precision:.0%}"
               + (f" and the runs lasted {self.config.confirm_span_s:g} s in all" if self.config.confirm_span_s else "")
               + f", or the budget ran out; they lasted {span_s:.0f} s)")
        half_width = verdict.half_width if verdict is not None else math.inf
        rounds = (len(a_runs) + len(b_runs)) // 2
        info: dict[str, Any] = {"rounds": rounds, "how": how,
                                "span_s": span_s, "steps_only": steps_only,
                                "half_width": half_width if math.isfinite(half_width) else None,
                                "precise": half_width <= self.config.confirm_precision,
                                "rounds_for_precision": rounds_for_precision(rounds, half_width,
                                                                             self.config.confirm_precision),
                                "baseline_runs": [r.to_dict() for r in a_runs],
                                "best_runs": [r.to_dict() for r in b_runs],
                                "verdict": verdict_dict, "per_sample": per_sample,
                                "lagging_rounds": [{"round": i + 1, "speedup": verdict.a_means[i] / verdict.b_means[i]}
                                                   for i in (verdict.lagging_rounds if verdict else [])]}
        failed = next((r for r in b_runs if not r.ok), None)
        if verdict is not None and verdict.disturbed:
            info["how"] += f"; {verdict.disturbed} disturbed run(s), outweighed by the median"
        if failed is not None or verdict is None:
            reason = f"the kept configuration failed when run again ({failed.failure[1] if failed else 'no runs'})"
            return {**info, "status": "failed", "reason": reason}
        if not verdict.decided:
            reason = (f"too noisy to confirm within the budget: runs of the baseline measured "
                      f"{_runs_text(verdict.a_means)} and of the kept knobs {_runs_text(verdict.b_means)}: no "
                      f"majority of one side within {self.config.run_tolerance:.0%}, nor runs whose ranks tell the "
                      "sides apart")
            return {**info, "status": "too noisy", "reason": reason}
        speed = verdict.verdict
        if speed.verdict != FASTER:
            reason = (f"side by side the kept knobs are not measurably faster than the baseline "
                      f"({_speed(speed.ratio)}, {_speed_ci(verdict.to_dict())}, noise floor {speed.noise_floor:.0%})")
            return {**info, "status": "not faster", "reason": reason}
        confirmed = f"confirmed {_speed(speed.ratio)} ({_speed_ci(verdict.to_dict())})"
        if not info["precise"]:
            confirmed += "; " + self._imprecision(info)
        if info["lagging_rounds"]:
            gains = ", ".join(f"x{r['speedup']:.2f}" for r in info["lagging_rounds"])
            confirmed += (f"; in {len(info['lagging_rounds'])} of {rounds} rounds the kept knobs gained only {gains}: "
                          "the speed-up depends on the machine's state (other processes' load), and a busier "
                          "machine may see less")
        return {**info, "status": "confirmed", "reason": confirmed}

    def _imprecision(self, info: dict[str, Any]) -> str:
        """Why a confirmed speed-up is less precise than aimed at, and what would make it so: a
        user told only "+-15%" cannot tell whether twice the budget would do or fifty times."""
        rounds, needed, half_width = info["rounds"], info["rounds_for_precision"], info["half_width"]
        uncertainty = f"+-{half_width:.0%}" if half_width is not None else "unknown"
        limit = (f"its {rounds} rounds were the most allowed (--confirm-max-rounds)"
                 if rounds >= self.config.confirm_max_rounds else f"the time budget ended it after {rounds} rounds")
        text = (f"its uncertainty, run to run, is {uncertainty}, wider than the {self.config.confirm_precision:.0%} "
                f"aimed at: {limit}")
        if needed and rounds:
            more_s = (needed - rounds) * info["span_s"] / rounds
            more = f"{more_s / 60:.0f} min" if more_s >= 120 else f"{more_s:.0f} s"
            text += f"; about {needed} rounds (~{more} more) would reach it if the machine stays this noisy"
        return text

    def _unconfirmed(self, why: str) -> None:
        """A stop before or during the confirmation: the best so far, said to be unconfirmed; the
        estimate is what the confirmation measured so far, else the product of the kept trials'
        side-by-side ratios."""
        a_runs, b_runs = self._pending
        paired = self._pending_paired  # only B's last run can have failed: the rounds hold
        a_runs = [r for r in a_runs if r.ok and r.knobs == {}]
        b_runs = [r for r in b_runs if r.ok and r.knobs == self.kept]
        estimate, source = None, "the kept trials' side-by-side ratios multiplied"
        if a_runs and b_runs and (self.confirmation or {}).get("status") == "running":
            if paired:  # the rounds completed so far (a stop between a round's two runs leaves one alone)
                a_runs, b_runs = a_runs[:len(b_runs)], b_runs[:len(a_runs)]
            verdict = compare_runs([r.times(False) for r in a_runs], [r.times(False) for r in b_runs],
                                   min_effect=self.config.min_effect, tolerance=self.config.run_tolerance,
                                   paired=paired)
            estimate, source = verdict.verdict.ratio, f"the confirmation's {len(a_runs)}+{len(b_runs)} runs so far"
        if estimate is None:
            estimate = 1.0
            for trial in self.trials:
                if trial.status == KEPT and trial.ratio:
                    estimate *= trial.ratio
        self.confirmation = {"status": "unconfirmed", "reason": f"{why}: the speed-up is an estimate ({source})",
                             "estimate_ratio": estimate, "how": f"not confirmed: estimate from {source}",
                             "baseline_runs": [r.to_dict() for r in a_runs], "best_runs": [r.to_dict() for r in b_runs],
                             "verdict": None, "rounds": 0, "span_s": _span(a_runs + b_runs), "per_sample": False,
                             "lagging_rounds": [],
                             "steps_only": any(r.steps_only for r in a_runs + b_runs)}

    def _noise(self) -> dict[str, Any]:
        runs = [r for r in self.baseline.runs if r.ok]
        times = sorted(runs[0].times(per_sample=False)) if runs else []
        noise: dict[str, Any] = {"spread": None, "step_s_p10": None, "step_s_p90": None, "repeat_step_ratio": None}
        if times:  # within the first run: (p90 - p10) / median of its step times
            p10, p50, p90 = (times[int(q * (len(times) - 1))] for q in (0.1, 0.5, 0.9))
            noise.update(spread=(p90 - p10) / p50 if p50 else None, step_s_p10=p10, step_s_p90=p90)
        if len(runs) > 1 and runs[0].step_s and runs[1].step_s:
            noise["repeat_step_ratio"] = runs[1].step_s / runs[0].step_s
        return {**noise, "runs_step_s": [r.step_s for r in runs], "disturbed_runs": sum(r.disturbed for r in runs),
                "loss_difference": self.loss_noise, "output_difference": self.output_noise,
                "deterministic": self.deterministic, "too_noisy": self.noisy}

    def _save(self, trial: Trial) -> None:
        self.store.save_trial(self.tune_id, trial.index, run_id=trial.run_id, knobs=trial.knobs,
                              verdict=trial.status, reason=trial.reason, figures=trial.figures())


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


def _span(runs: list[Run]) -> float:
    """How long `runs` lasted in all (seconds): the time the machine's moves had to show in them."""
    return sum(r.duration_s for r in runs)


def _trial_ci(verdict: RunsVerdict) -> str:
    """A trial's intervals in its reason: the one it was decided on, the bootstrap CI of the runs'
    steps against the noise floor (the spread between a side's runs), and, where wider, the one
    across its 2-3 rounds (`RunsVerdict.ci_across_runs`, Student's t for that few). The second alone
    read "kept, faster side by side: x1.10 (95% CI x0.83-x1.46)", a keep of what might be slower
    (tune_zoo, session 32); the confirmation's rounds, not a trial's, measure the claim."""
    low, high = verdict.verdict.ci_low, verdict.verdict.ci_high
    runs = f"{len(verdict.a_means)}+{len(verdict.b_means)} runs"
    if not (low > 0 and high > 0):
        return f"{_speed_ci(verdict.to_dict())}, {runs}"
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


def _pace(trial: Trial) -> float | None:
    """A configuration's step time as its trial measured it (the median of its runs' paces)."""
    paces = [r.step_s for r in trial.runs if r.ok and r.step_s]
    return statistics.median(paces) if paces else None


def _runs_text(medians: Sequence[float]) -> str:
    return ", ".join(_ms(m) for m in medians)


def _values(span: IntRange) -> set[int]:
    return set(range(span.low, span.high + 1))

