"""Running the script for a tune: each configuration observed in a fresh subprocess and stored,
a stop signal honoured between and during runs, and the budget the runs leave."""

from __future__ import annotations

import signal
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from torchdoctor.tune.budget import fits_in_budget
from torchdoctor.tune.config import TuneConfig
from torchdoctor.tune.protocols import TrialStore, TuneProgress
from torchdoctor.tune.trial import INTERRUPTED, Run, RunRequest, Trial, observe_run


class Interrupted(Exception):
    """A run was stopped by a signal, or one arrived between runs."""


@dataclass(frozen=True, slots=True)
class TuneSetup:
    """What a tune runs and reports to: the script and its arguments, the options, where runs and
    trials are stored (each run's outputs under `work_dir/<tune_id>/run<N>`), who hears of its
    progress, and `stop_signal()`: the stop signal torchdoctor received, if any
    (launch.stops.StopLog.first)."""

    script: Path
    args: list[str]
    config: TuneConfig
    store: TrialStore
    work_dir: Path
    tune_id: str
    progress: TuneProgress | None
    stop_signal: Callable[[], int | None]


@dataclass(slots=True)
class Runner:
    """Runs the script for a tune and keeps every run, in order: the budget is planned from them
    and the one that ran last may be reused beside the next. `exit_status`: 128 + the stop signal
    once a stop was reported (`stopped_by`), else 0."""

    setup: TuneSetup
    runs: list[Run] = field(default_factory=list)
    exit_status: int = 0
    started_s: float = field(default_factory=time.perf_counter)

    @property
    def config(self) -> TuneConfig:
        return self.setup.config

    @property
    def last(self) -> Run | None:
        """The run that ran last (adjacent in time to the next)."""
        return self.runs[-1] if self.runs else None

    def observe(self, knobs: dict[str, Any], role: str, *, diagnose: bool = False,
                timing_steps: int | None = None, steps_only: bool = False) -> Run:
        """One run of the script with `knobs` (`timing_steps` timed, the config's unless given;
        `steps_only`: by the step hooks alone), stored. Raises Interrupted when a stop signal
        arrived before it (start no other) or interrupted it."""
        setup = self.setup
        if setup.stop_signal() is not None:
            raise Interrupted()
        if setup.progress:
            label = ", ".join(f"{k}={v!r}" for k, v in knobs.items()) or "no knobs"
            setup.progress.run_started(label, role)
        out_dir = setup.work_dir / setup.tune_id / f"run{len(self.runs)}"
        request = RunRequest(knobs, role, out_dir, diagnose=diagnose, timing_steps=timing_steps,
                             steps_only=steps_only)
        run = observe_run(setup.script, setup.args, setup.config, request)
        self.runs.append(run)
        if run.failure and run.failure[0] == INTERRUPTED:
            raise Interrupted()
        if run.record is not None:
            setup.store.save(run.record)
        return run

    def room(self, count: int, *, confirmation: bool = True) -> bool:
        """Whether `count` more runs, and the confirmation (reserved), fit in the time budget
        (`budget.fits_in_budget`)."""
        return fits_in_budget(self.config, self.runs, self.elapsed_s(), count, confirmation=confirmation)

    def elapsed_s(self) -> float:
        """Wall time since the tune started."""
        return time.perf_counter() - self.started_s

    def save(self, trial: Trial) -> None:
        """Store `trial` as it stands (a trial saved again replaces its earlier row)."""
        self.setup.store.save_trial(self.setup.tune_id, trial.index, run_id=trial.run_id, knobs=trial.knobs,
                                    verdict=trial.status, reason=trial.reason, figures=trial.figures())

    def stopped_by(self) -> str:
        """The stop's signal name; sets `exit_status` to 128 + it (SIGINT when none was logged)."""
        signum = self.setup.stop_signal() or signal.SIGINT
        self.exit_status = 128 + signum
        return "Ctrl-C" if signum == signal.SIGINT else signal.Signals(signum).name
