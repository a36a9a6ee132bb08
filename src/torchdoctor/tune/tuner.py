"""`torchdoctor tune`'s steps in order: the baseline, the search, the confirmation, the result.

1. Baseline: the script without knobs, profiled and diagnosed (the findings order the knobs),
   then run again (unless `repeat_baseline` is off) until two runs agree: the script's own noise
   (`torchdoctor.tune.baseline`).
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

from pathlib import Path
from typing import Callable, Sequence

from torchdoctor.record import new_run_id
from torchdoctor.tune.baseline import measure_baseline, noise_report
from torchdoctor.tune.candidates import findings_of, named_knobs, ordered_candidates
from torchdoctor.tune.claims import check_claims
from torchdoctor.tune.confirmation import confirmation
from torchdoctor.tune.errors import BaselineFailedError, TuneInterruptedError
from torchdoctor.tune.config import TuneConfig
from torchdoctor.tune.protocols import TrialStore, TuneProgress
from torchdoctor.tune.result import Conclusion, TuneResult
from torchdoctor.tune.runner import Interrupted, Runner, TuneSetup
from torchdoctor.tune.search import SearchHistory, search
from torchdoctor.tune.state import TuneState
from torchdoctor.tune.trial import BASELINE_RUN, Run, Trial


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
        during the first baseline run, BaselineFailedError when that run fails."""
        runner = Runner(TuneSetup(self.script, self.args, self.config, self.store, self.work_dir, self.tune_id,
                                  self.progress, self.stop_signal))
        first = _first_baseline_run(runner)
        state = TuneState(baseline=Trial(index=0, knob=None, value=None, knobs={}, runs=[first]),
                          trial_steps=(self.config.confirm_steps(first.step_s) if self.config.repeat_baseline
                                       else self.config.timing_steps))
        order = ordered_candidates(first.record, allow_batch_size=self.config.allow_batch_size,
                                   only=self.config.only)
        history = SearchHistory(named=[n for n in named_knobs(first.record) if n in order])
        interrupted = False
        try:
            measure_baseline(runner, state)
            search(runner, state, order, history)
        except (KeyboardInterrupt, Interrupted):
            interrupted = True
            state.stop_reason = f"interrupted ({runner.stopped_by()}): best so far reported, unconfirmed"
        if state.noise.too_noisy and not state.kept and not interrupted:
            state.stop_reason = (f"the machine is too noisy to decide anything within the budget: "
                                 f"{state.noise.too_noisy}; nothing kept (the search: {state.stop_reason})")
        confirmed = confirmation(runner, state, search_interrupted=interrupted) if state.kept else None
        claims = check_claims(findings_of(first.record), state.trials, considered=history.considered,
                              candidates=order)
        conclusion = Conclusion(confirmation=confirmed, noise=noise_report(state.baseline, state.noise),
                                findings=claims, exit_status=runner.exit_status)
        return TuneResult.build(runner.setup, state, conclusion)


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

