"""`torchdoctor tune`'s steps in order: the baseline, the search, the confirmation, the result.

1. Baseline: the script without knobs, profiled and diagnosed, then run again (unless
   `repeat_baseline` is off) until two runs agree: the script's own noise
   (`torchdoctor.tune.baseline`). When the profiled run disagrees with the others (disturbed), it
   is profiled and diagnosed once more before the search. The script's structure
   (`torchdoctor.tune.structure`, counts that load does not change) puts the knobs whose
   precondition holds first, then the findings' knobs; the plan (trials, time, budget) is told.
2. Search: one knob at a time on top of what was kept, each value a trial judged side by side
   against the best configuration so far (`torchdoctor.tune.search`, `torchdoctor.tune.trial_runner`).
3. Confirmation: baseline and best configuration interleaved until the speed-up is precise
   (`torchdoctor.tune.confirmation`).

A stop signal (Ctrl-C, SIGTERM, SIGHUP: the running run is interrupted, or `stop_signal()` says
one arrived between runs) keeps and reports the trials so far, unconfirmed, and the result's
`exit_status` is 128 + the signal. A stop during the first baseline run leaves nothing to report
(TuneInterruptedError).
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

from torchdoctor.record import Record, new_run_id
from torchdoctor.tune.baseline import measure_baseline, noise_report
from torchdoctor.tune.budget import fits_in_budget, run_estimate
from torchdoctor.tune.candidates import findings_of, fix_companions, named_knobs, ordered_candidates
from torchdoctor.tune.claims import check_claims
from torchdoctor.tune.confirmation import confirmation
from torchdoctor.tune.errors import BaselineFailedError, BudgetTooShortError, TuneInterruptedError
from torchdoctor.tune.config import TuneConfig
from torchdoctor.tune.load import decided_under_load, load_notes, load_seen
from torchdoctor.tune.plan import SearchPlan, search_plan
from torchdoctor.tune.protocols import TrialStore, TuneProgress
from torchdoctor.tune.patched import check_patched
from torchdoctor.tune.result import Conclusion, TuneResult, kept_intercepted, permanent_knobs
from torchdoctor.tune.runner import Interrupted, Runner, TuneSetup
from torchdoctor.tune.search import SearchHistory, search
from torchdoctor.tune.state import TuneState
from torchdoctor.tune.structure import preconditions, script_structure
from torchdoctor.tune.trial import BASELINE_RUN, CONFIRM_BASELINE, CONFIRM_BEST, Run, Trial
from torchdoctor.tune.wording import ms


@dataclass(slots=True)
class SearchEvidence:
    """What orders the search: the `diagnosis` (the profiled baseline run's Record, its findings
    naming knobs), the knobs `required` by the script's structure (name -> why), whether the
    diagnosis was `rediagnosed` (its first run disturbed), and the `plan` told before the trials."""

    diagnosis: Record
    required: dict[str, str]
    rediagnosed: bool = False
    plan: SearchPlan | None = None

    def to_dict(self, history: SearchHistory) -> dict[str, Any]:
        """The result's `search` (docs/tune.md): the required knobs and whether each was tried to
        a decision, the structure's counts, the re-diagnosis and the plan."""
        return {"required": [{"knob": n, "why": why, "decided": n in history.decided}
                             for n, why in history.required.items()],
                "structure": script_structure(self.diagnosis).to_dict(), "rediagnosed": self.rediagnosed,
                "plan": self.plan.to_dict() if self.plan else None}


class Tuner:
    """Tunes `script` run with `args` under `config`: runs and trials are stored in `store`, each
    run's outputs under `work_dir`, progress told to `progress`; `stop_signal()`: the stop signal
    torchdoctor received, if any (launch.stops.StopLog.first)."""

    def __init__(self, script: str | Path, args: Sequence[str], config: TuneConfig, *, store: TrialStore,
                 work_dir: Path, progress: TuneProgress | None = None,
                 stop_signal: Callable[[], int | None] = lambda: None) -> None:
        self.script, self.args, self.config = Path(script), list(args), config
        self.store, self.work_dir, self.progress = store, Path(work_dir), progress
        self.stop_signal = stop_signal
        self.tune_id = "tune-" + new_run_id()

    def run(self) -> TuneResult:
        """Tune the script; the result of every step that ran. Raises TuneInterruptedError on a stop
        during the first baseline run, BaselineFailedError when that run fails, BudgetTooShortError when
        the time budget cannot hold the baseline (`_check_budget`)."""
        runner = Runner(TuneSetup(self.script, self.args, self.config, self.store, self.work_dir, self.tune_id,
                                  self.progress, self.stop_signal))
        first = _first_baseline_run(runner)
        _check_budget(runner, first)
        state = TuneState(baseline=Trial(index=0, knob=None, value=None, knobs={}, runs=[first]),
                          trial_steps=(self.config.confirm_steps(first.step_s) if self.config.repeat_baseline
                                       else self.config.timing_steps))
        evidence = SearchEvidence(diagnosis=first.record, required=preconditions(script_structure(first.record)))
        order, history = self._order(evidence)
        interrupted = False
        try:
            measure_baseline(runner, state)
            evidence = _rediagnosed(runner, state, evidence)
            order, history = self._order(evidence)
            self._tell_plan(runner, state, order, evidence)
            search(runner, state, order, history)
        except (KeyboardInterrupt, Interrupted):
            interrupted = True
            state.stop_reason = f"interrupted ({runner.stopped_by()}): best so far reported, unconfirmed"
        if state.noise.too_noisy and not state.kept and not interrupted:
            state.stop_reason = (f"the machine is too noisy to decide anything within the budget: "
                                 f"{state.noise.too_noisy}; nothing kept (the search: {state.stop_reason})")
        confirmed = confirmation(runner, state, search_interrupted=interrupted) if state.kept else None
        claims = check_claims(findings_of(evidence.diagnosis), state.trials, considered=history.considered,
                              candidates=order)
        confirming = [run for run in runner.runs if run.role in (CONFIRM_BASELINE, CONFIRM_BEST)]
        loaded = decided_under_load(state.trials, confirming)
        load = load_seen(runner.runs)
        search_section = {**evidence.to_dict(history), "load": {**load.to_dict(), "text": load.text()} if load else None,
                          "load_dependent": load_notes(loaded, state.kept)}
        conclusion = Conclusion(confirmation=confirmed, noise=noise_report(state.baseline, state.noise),
                                findings=claims, exit_status=runner.exit_status, search=search_section,
                                load_dependent=list(loaded))
        result = TuneResult.build(runner.setup, state, conclusion)
        if result.diff and not interrupted and runner.setup.stop_signal() is None:
            result.diff_check = check_patched(runner.setup, permanent_knobs(state, conclusion.load_dependent),
                                              kept_intercepted(state), state.best.record)
        return result

    def _order(self, evidence: SearchEvidence) -> tuple[list[str], SearchHistory]:
        """The knobs in the order tried (structural preconditions, then findings, then the
        default order) and a fresh history knowing which are named and which required."""
        order = ordered_candidates(evidence.diagnosis, allow_batch_size=self.config.allow_batch_size,
                                   only=self.config.only, first=list(evidence.required))
        required = {n: why for n, why in evidence.required.items() if n in order}
        return order, SearchHistory(named=[n for n in named_knobs(evidence.diagnosis) if n in order],
                                    required=required, companions=fix_companions(evidence.diagnosis))

    def _tell_plan(self, runner: Runner, state: TuneState, order: list[str], evidence: SearchEvidence) -> None:
        """Estimate the search (trials, time, the budget that stops it), keep it in `evidence` and
        tell the progress before the first trial."""
        run_s = run_estimate(state.baseline.runs)
        evidence.plan = search_plan(order, state.baseline.record or evidence.diagnosis, self.config, run_s)
        if self.progress:
            self.progress.planned(evidence.plan)


#: How much slower than the baseline's agreeing runs the profiled run's steps must be for its
#: diagnosis to be taken again: a run a few tens of percent off shares its findings with the
#: others (the diagnosis reads shares and counts); one several times slower (148 ms a step
#: against 5.4 ms under another job) timed the other job, and found nothing.
REDIAGNOSE_SLOWDOWN = 1.5


def _rediagnosed(runner: Runner, state: TuneState, evidence: SearchEvidence) -> SearchEvidence:
    """When the profiled baseline run was disturbed (it disagrees with the others) and its steps
    were REDIAGNOSE_SLOWDOWN times slower than theirs or more (its diagnosis timed another job's
    load), profile and diagnose the script once more, budget permitting; the knobs required by
    either run's structure stay required. `evidence` unchanged otherwise."""
    runs = state.baseline.runs
    agreeing = [r.step_s for r in runs[1:] if not r.disturbed and r.step_s]
    if not runs[0].disturbed or not agreeing or not runner.room(1):
        return evidence
    if (runs[0].step_s or float("inf")) < REDIAGNOSE_SLOWDOWN * statistics.median(agreeing):
        return evidence
    again = runner.observe({}, BASELINE_RUN, diagnose=True)
    if not again.ok:
        return evidence
    again.record.findings = findings_of(again.record)
    required = {**preconditions(script_structure(again.record)), **evidence.required}
    return SearchEvidence(diagnosis=again.record, required=required, rediagnosed=True)


def _check_budget(runner: Runner, first: Run) -> None:
    """Raise BudgetTooShortError when the time budget cannot hold the baseline: its first run
    and, when the baseline is repeated (its noise measured), one more run like it. No trial
    could be judged then; the message says what the first run measured and what would do."""
    config = runner.config
    elapsed = runner.elapsed_s()
    needed = 1 if config.repeat_baseline else 0
    if fits_in_budget(config, [first], elapsed, needed, confirmation=False):
        return
    budget = (f"--time-budget {config.time_budget_s:g} s" if config.time_budget_s is not None
              else f"the default budget of {config.budget_s:g} s")
    steps = len(first.record.steps) if first.record else 0
    runs = "two runs of the script" if needed else "one run of the script"
    raise BudgetTooShortError(
        f"{budget} is too short for even the baseline: its first run took {first.duration_s:.1f} s "
        f"({steps} steps at {ms(first.step_s)} a step, run {first.run_id}); the baseline alone takes "
        f"{runs}, about {(1 + needed) * first.duration_s:.0f} s, and each trial two or more; "
        f"give --time-budget several times that (or fewer --steps)")


def _first_baseline_run(runner: Runner) -> Run:
    """The script without knobs, profiled and diagnosed. Its Record carries the diagnosis's
    findings: they order the knobs, and a knob's search starts where its finding's fix points
    (num_workers: the count TD-DATA-002/007 name)."""
    try:
        first = runner.observe({}, BASELINE_RUN, diagnose=True)
    except Interrupted:
        stopped_by = runner.stopped_by()
        raise TuneInterruptedError(f"interrupted ({stopped_by}) during the baseline run: nothing to report",
                                   exit_code=runner.exit_status) from None
    if not first.ok:
        raise BaselineFailedError(f"the baseline run failed ({first.failure[1]}); fix the script first")
    first.record.findings = findings_of(first.record)
    return first

