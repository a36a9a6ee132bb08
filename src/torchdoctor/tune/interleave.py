"""Two configurations measured side by side: runs of A and B interleaved A B B A ..., judged by
`torchdoctor.bench.compare_runs` (paired where each round's two runs ran one after the other, so
that the machine's moves cancel within a round)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from torchdoctor.bench import RunsVerdict, compare_runs
from torchdoctor.tune.config import TuneConfig
from torchdoctor.tune.runner import Runner
from torchdoctor.tune.trial import Run


@dataclass(frozen=True, slots=True)
class InterleavePlan:
    """What to run side by side, and until when: A's and B's knobs and `roles`, for `rounds`
    rounds, more (up to `max_rounds`) while runs of one side disagree or, given `precision`, while
    the ratio's 95% uncertainty is wider than that (RunsVerdict.half_width), or while the runs last
    less than `min_span_s` in all. `steps`: each side's timed steps (None: the config's);
    `per_sample`: the runs compared per sample, not per step; `steps_only`: every run observed by
    the step hooks alone; `confirmation`: the runs are the confirmation's (the budget reserves
    nothing after them)."""

    a_knobs: dict[str, Any]
    b_knobs: dict[str, Any]
    roles: tuple[str, str]
    rounds: int
    max_rounds: int
    per_sample: bool
    steps: tuple[int | None, int | None] = (None, None)
    precision: float | None = None
    min_span_s: float = 0.0
    steps_only: bool = False
    confirmation: bool = False

    def side(self, side: str, config: TuneConfig) -> tuple[dict[str, Any], str, int]:
        """Side "A" or "B"'s knobs, role and timed steps."""
        index = 0 if side == "A" else 1
        knobs = self.a_knobs if index == 0 else self.b_knobs
        return knobs, self.roles[index], self.steps[index] or config.timing_steps


@dataclass(slots=True)
class Interleaving:
    """The runs of A and B so far, kept as they come (what a stop leaves); `paired`: their k-th
    runs ran one right after the other (a failed run of A shifts the rounds by one)."""

    a_runs: list[Run] = field(default_factory=list)
    b_runs: list[Run] = field(default_factory=list)
    paired: bool = True


def span_s(runs: Sequence[Run]) -> float:
    """How long `runs` lasted in all (seconds): the time the machine's moves had to show in them."""
    return sum(r.duration_s for r in runs)


def interleave(runner: Runner, plan: InterleavePlan, runs: Interleaving,
               first_b: Callable[[Run], bool] | None = None) -> RunsVerdict | None:
    """Run `plan` into `runs` and judge them: A B B A ... round after round until the verdict is
    settled (see InterleavePlan), the rounds reach `max_rounds` or the budget has no room for
    another. The run that just ran is reused when it is A's (or B's) configuration with that
    window, observed alike. `first_b(run)` may stop early (False) once B has run once (numerics).
    Returns None, without a verdict, at B's first failed run or such a stop."""
    pattern = _reuse_last(runner, plan, runs)
    position = len(runs.a_runs) + len(runs.b_runs)
    target = plan.rounds
    while True:
        while len(runs.a_runs) + len(runs.b_runs) < 2 * target:
            side = pattern[position % 4]
            position += 1
            if not _run_side(runner, plan, runs, side, first_b):
                return None
        verdict = _compare(runner.config, plan, runs)
        settled = (verdict.decided and (plan.precision is None or verdict.half_width <= plan.precision)
                   and span_s(runs.a_runs + runs.b_runs) >= plan.min_span_s)
        if settled or target >= plan.max_rounds or not runner.room(2, confirmation=not plan.confirmation):
            return verdict
        target += 1


def _reuse_last(runner: Runner, plan: InterleavePlan, runs: Interleaving) -> str:
    """Take the run that just ran as A's (or B's) first when it measured that configuration's
    window alike and undisturbed; returns the order the rounds' runs then take."""
    last = runner.last
    if last is None or not last.ok or last.disturbed or last.steps_only != plan.steps_only:
        return "ABBA"
    for side, side_runs, pattern in (("A", runs.a_runs, "ABBA"), ("B", runs.b_runs, "BAAB")):
        knobs, _, steps = plan.side(side, runner.config)
        if last.knobs == knobs and last.timing_steps == steps:
            side_runs.append(last)
            return pattern
    return "ABBA"


def _run_side(runner: Runner, plan: InterleavePlan, runs: Interleaving, side: str,
              first_b: Callable[[Run], bool] | None) -> bool:
    """One run of `side`, added to its runs; False when the interleaving must stop (B failed, or
    `first_b` said so after B's first run). A failed run of A is left out (the rounds shift)."""
    knobs, role, steps = plan.side(side, runner.config)
    run = runner.observe(knobs, role, timing_steps=steps, steps_only=plan.steps_only)
    if side == "A":
        if run.ok:
            runs.a_runs.append(run)
        else:
            runs.paired = False
        return True
    runs.b_runs.append(run)
    if not run.ok:
        return False
    return not (len(runs.b_runs) == 1 and first_b is not None and not first_b(run))


def _compare(config: TuneConfig, plan: InterleavePlan, runs: Interleaving) -> RunsVerdict:
    """The runs so far judged side by side; marks each run the verdict left out as disturbed."""
    a_runs, b_runs = runs.a_runs, runs.b_runs
    verdict = compare_runs([r.times(plan.per_sample) for r in a_runs], [r.times(plan.per_sample) for r in b_runs],
                           min_effect=config.min_effect, tolerance=config.run_tolerance, seed=config.seed,
                           paired=runs.paired and len(a_runs) == len(b_runs))
    for side_runs, kept in ((a_runs, verdict.a_kept), (b_runs, verdict.b_kept)):
        for index, run in enumerate(side_runs):
            run.disturbed = index not in kept
    return verdict
