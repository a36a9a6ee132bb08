"""The time budget: whether more runs, and the confirmation reserved after them, still fit."""

from __future__ import annotations

import statistics
from typing import Sequence

from torchdoctor.tune.config import TuneConfig
from torchdoctor.tune.trial import Run


def run_estimate(runs: Sequence[Run]) -> float:
    """A run's expected duration: the median of the timing-only runs. The first run (the
    baseline, profiled and diagnosed besides) is left out once another exists: of two runs the
    median is their mean, and a 190 ms-step script's search once ended after its baselines
    with 190 s of its 240 s budget unused."""
    durations = [r.duration_s for r in runs[1:]] or [r.duration_s for r in runs]
    return statistics.median(durations) if durations else 0.0


def runs_per_trial(config: TuneConfig) -> int:
    """Runs a trial takes at least (its first A is usually the run that just ran)."""
    return 2 * config.rounds - 1


def fits_in_budget(config: TuneConfig, runs: Sequence[Run], wall_s: float, count: int, *,
                   confirmation: bool = True) -> bool:
    """Whether `count` more runs, and the confirmation (reserved), fit in the time budget, after
    `runs` and `wall_s` seconds of wall time (the longer of the two counts); `confirmation` False:
    the runs are the confirmation's own (nothing is left to reserve, each may time a longer window)."""
    budget = config.budget_s
    estimate = run_estimate(runs)
    confirming = estimate + config.confirm_window_s  # its windows may be that much longer
    reserve = max(2 * config.confirm_rounds * confirming, config.confirm_span_s) if confirmation else 0.0
    elapsed = max(wall_s, sum(r.duration_s for r in runs))
    return elapsed + count * (estimate if confirmation else confirming) + reserve <= budget
