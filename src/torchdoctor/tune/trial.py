"""Runs and trials.

A *run* is one fresh observed subprocess of the real script with a set of knobs applied. A
*trial* is one knob value judged side by side: runs of the candidate interleaved with runs of the
best configuration so far (A B B A ...), each run an observation (`torchdoctor.tune.trial_runner`).
"""

from __future__ import annotations

import os
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from torchdoctor.analyse import analyse_record
from torchdoctor.bench import geometric_median
from torchdoctor.environment import Environment
from torchdoctor.knobs import knob_env
from torchdoctor.launch import LaunchConfig, ObserveConfig, observe
from torchdoctor.launch.log import log_tail
from torchdoctor.observe.probes.outputs import SEED_ENV, load_outputs
from torchdoctor.record import Record
from torchdoctor.tune.config import TuneConfig

BASELINE, KEPT, REJECTED, FAILED, INTERRUPTED = "baseline", "kept", "rejected", "failed", "interrupted"
#: A value measured faster with its numerics intact, before the knob's other values are settled.
ACCEPTED = "accepted"

#: Each run's own output (stdout and stderr), in its folder; a failed run's reason quotes its last LOG_LINES.
SCRIPT_LOG, LOG_LINES = "script.log", 5

#: Steps after each run's timing window whose outputs the numerics check compares (at most the
#: window's length): a run ends this many steps later than its window.
CAPTURE_STEPS = 10

#: Roles of a run: the baseline (no knob), a candidate configuration, the best configuration so
#: far run beside a candidate (the reference), and the two sides of the final confirmation.
BASELINE_RUN, CANDIDATE, REFERENCE, CONFIRM_BASELINE, CONFIRM_BEST = (
    "baseline", "candidate", "reference", "confirm-baseline", "confirm-best")


@dataclass(slots=True)
class Run:
    """One observed subprocess. `failure`: (status, reason) when it measured no window."""

    knobs: dict[str, Any]
    role: str
    run_id: str | None = None
    step_s: float | None = None
    sample_s: float | None = None
    duration_s: float = 0.0
    failure: tuple[str, str] | None = None
    disturbed: bool = False
    timing_steps: int = 0  # the window asked for (a script that ends sooner times fewer)
    steps_only: bool = False  # observed with the step hooks alone (ObserveConfig.steps_only)
    record: Record | None = field(default=None, repr=False)
    outputs: list[dict[str, Any]] | None = field(default=None, repr=False)

    @property
    def ok(self) -> bool:
        return self.failure is None

    def times(self, per_sample: bool) -> list[float]:
        """Step times of the timing window; per sample when `per_sample`: each step's time over the
        window's mean batch, so that their mean is the window's total time over its total samples
        (a short last batch weighs as little as it counts), as `torchdoctor check` divides."""
        steps = self.record.steps if self.record else []
        if not per_sample:
            return [s.wall_s for s in steps]
        sized = [s for s in steps if s.batch_size]
        mean_batch = statistics.fmean(s.batch_size for s in sized) if sized else 0.0
        return [s.wall_s / mean_batch for s in sized]

    def losses(self) -> list[float | None]:
        return [s.loss for s in self.record.steps] if self.record else []

    def intercepted(self) -> list[dict[str, Any]]:
        """Calls of the script that would have undone a knob, held off and recorded (file:line), as
        the Record's `env.knob_guard` holds them."""
        guarded = Environment.or_empty(self.record.env).knob_guard if self.record else ()
        return [call.to_dict() for call in guarded]

    def to_dict(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "role": self.role, "step_s": self.step_s, "sample_s": self.sample_s,
                "duration_s": self.duration_s, "disturbed": self.disturbed,
                "timed_steps": len(self.record.steps) if self.record else 0,
                "failed": self.failure[1] if self.failure else None}


@dataclass(slots=True)
class Trial:
    """One knob value judged side by side (the baseline is trial 0, its runs the baseline's).
    `knobs` is every knob applied (those kept so far plus the one tried); `runs` are the
    candidate's runs and `reference` the best configuration's runs beside them."""

    index: int
    knob: str | None
    value: Any
    knobs: dict[str, Any]
    status: str = BASELINE
    reason: str = ""
    runs: list[Run] = field(default_factory=list)
    reference: list[Run] = field(default_factory=list)
    verdict: dict[str, Any] | None = None
    numerics: dict[str, Any] | None = None
    overridden: str | None = None
    ratio: float | None = None  # candidate / reference, side by side (< 1: faster)
    memory: dict[str, Any] | None = None  # peak memory of both sides (tune/memory.py)

    @property
    def record(self) -> Record | None:
        first = next((r for r in self.runs if r.record is not None), None)
        return first.record if first else None

    @property
    def run_id(self) -> str | None:
        return self.runs[0].run_id if self.runs else None

    @property
    def step_s(self) -> float | None:
        return geometric_median([r.step_s for r in self.runs if r.ok])

    @property
    def sample_s(self) -> float | None:
        return geometric_median([r.sample_s for r in self.runs if r.ok])

    @property
    def reference_step_s(self) -> float | None:
        return geometric_median([r.step_s for r in self.reference if r.ok])

    @property
    def duration_s(self) -> float:
        return sum(r.duration_s for r in self.runs + self.reference)

    def intercepted(self) -> list[dict[str, Any]]:
        seen: dict[tuple[Any, ...], dict[str, Any]] = {}
        for run in self.runs:
            for item in run.intercepted():
                seen.setdefault((item.get("knob"), item.get("file"), item.get("line")), item)
        return list(seen.values())

    def figures(self) -> dict[str, Any]:
        return {"step_s": self.step_s, "sample_s": self.sample_s, "reference_step_s": self.reference_step_s,
                "ratio": self.ratio, "duration_s": self.duration_s, "verdict": self.verdict,
                "numerics": self.numerics, "overridden": self.overridden, "status": self.status,
                "intercepted": self.intercepted(), "memory": self.memory,
                "runs": [r.to_dict() for r in self.runs], "reference": [r.to_dict() for r in self.reference]}

    def to_dict(self) -> dict[str, Any]:
        return {"index": self.index, "knob": self.knob, "value": self.value, "knobs": self.knobs,
                "status": self.status, "reason": self.reason, "run_id": self.run_id, **self.figures()}


def undecided(trial: Trial) -> bool:
    """Whether the trial measured without a decision: runs of one configuration disagreed (too
    noisy to decide). Such a trial says nothing about the knob: the search counts it as untried."""
    return trial.verdict is not None and trial.verdict.get("decided") is False


def speedup_interval(verdict: dict[str, Any] | None) -> list[float] | None:
    """The speed-up's (reference over candidate) 95% CI from a RunsVerdict's dict: its CI across
    runs (`torchdoctor.bench.RunsVerdict.ci_across_runs`, the run-to-run scatter in), else, with
    fewer than two agreeing runs a side, its bootstrap CI; None when it has neither."""
    verdict = verdict or {}
    low, high = verdict.get("ci_across_runs") or (verdict.get("ci_low"), verdict.get("ci_high"))
    return [1.0 / high, 1.0 / low] if low and high else None


def interval_source(verdict: dict[str, Any] | None) -> str:
    """Where `speedup_interval` took the interval from, in words for a report's `how`: a reader
    told "widened by the scatter between rounds" must not be looking at the bootstrap alone."""
    verdict = verdict or {}
    if verdict.get("separated"):
        return "the runs' ranks (the ratios of every pair of runs, Hodges-Lehmann), the runs too noisy to agree"
    between = "rounds" if verdict.get("paired") else "runs"
    if verdict.get("from_scatter"):
        return f"the scatter between {between} (a run's steps are not independent draws: bench.stats.SCATTER_ROUNDS)"
    if verdict.get("ci_across_runs"):
        return f"the bootstrap of each run's steps, widened by the scatter between {between}"
    return "the bootstrap of each run's steps alone (too few agreeing runs a side to know their scatter)"


def _failure(record: Record, timeout_s: float, log: Path) -> tuple[str, str] | None:
    """(status, reason) when the run did not measure its window, else None; a failed run's reason
    names where its output is (`log`), then quotes its last LOG_LINES lines on lines of their own."""
    if record.exit.reason == "interrupted":
        return INTERRUPTED, f"interrupted ({record.exit.signal or 'SIGINT'})"
    if record.exit.reason == "timeout":
        reason = f"timed out after {timeout_s:g} s"
    elif record.exit.status != 0 or not record.steps:
        message = record.exit.message or record.exit.reason or "no steps measured"
        last_line = (record.exit.traceback or "").strip().splitlines()[-1:] or [message]
        reason = f"{record.exit.reason}: {last_line[0]}"
    else:
        return None
    tail = log_tail(log, LOG_LINES)
    return FAILED, f"{reason}; the script's output: {log}" + (f"\n{tail}" if tail else "")


def trial_env(knobs: dict[str, Any], config: TuneConfig) -> dict[str, str]:
    """The environment of every run: knob variables, the seed."""
    # String hashing is randomised per process unless PYTHONHASHSEED is set; fixing it keeps a
    # script that hashes strings (tokenisers, sets) reproducible from run to run.
    env = {"PYTHONHASHSEED": os.environ.get("PYTHONHASHSEED", "0"), **knob_env(knobs)}
    if config.script_seed is not None:
        env[SEED_ENV] = str(config.script_seed)
    return env


@dataclass(frozen=True, slots=True)
class RunRequest:
    """What one run is asked to do: apply `knobs`, in the role `role`, its outputs written under
    `out_dir`; time `timing_steps` (the config's unless given: the confirmation's longer windows);
    with `steps_only`, be observed by the step hooks alone and sample no outputs
    (ObserveConfig.steps_only); with `diagnose`, also profile and diagnose (`observe_run`);
    `python_path`: folders put on the script's import path after its own."""

    knobs: dict[str, Any]
    role: str
    out_dir: Path
    diagnose: bool = False
    timing_steps: int | None = None
    steps_only: bool = False
    python_path: tuple[str, ...] = ()


def observe_run(script: Path, args: Sequence[str], config: TuneConfig, request: RunRequest) -> Run:
    """Observe the script once as `request` asks. Timing only, unless `request.diagnose`: then a
    profiler window and a memory step follow the timing window (their steps are not timed) and the
    Record is analysed (trace, lint), so that the diagnosis behind the candidates' order has its
    evidence. The other runs skip the memory step and the threads probe: no verdict reads them (on a
    small script the memory step cost 0.1-0.2 s of each run's 5 s). No run probes compiling: tune
    measures the compile knob as a trial of its own."""
    knobs, diagnose, steps_only = request.knobs, request.diagnose, request.steps_only
    timing_steps = request.timing_steps or config.timing_steps
    observe_config = ObserveConfig(warmup_steps=config.warmup_steps, timing_steps=timing_steps,
                                   profile=diagnose, memory=diagnose, threads_probe=diagnose, knobs=knobs,
                                   compile_probe=False, steps_only=steps_only,
                                   capture_steps=0 if steps_only else min(config.timing_steps, CAPTURE_STEPS))
    # --standalone (no option given): a free port, so concurrent jobs never clash.
    torchrun_args = (list(config.torchrun_args) or ["--standalone"]) if config.nproc_per_node else []
    log = request.out_dir / SCRIPT_LOG  # the script's own output, kept off tune's terminal
    launch = LaunchConfig(extra_env=trial_env(knobs, config), timeout_s=config.trial_timeout_s,
                          nproc_per_node=config.nproc_per_node, torchrun_args=torchrun_args, log_path=str(log),
                          python_path=list(request.python_path))
    start = time.perf_counter()
    record = observe(script, args, observe_config, launch, out_dir=request.out_dir)
    elapsed = time.perf_counter() - start
    if diagnose or len(record.ranks) > 1:  # the distributed knobs read record.distributed
        record = analyse_record(record, lint=diagnose)
    run = Run(knobs=dict(knobs), role=request.role, run_id=record.run_id, duration_s=elapsed, record=record,
              timing_steps=timing_steps, steps_only=steps_only,
              failure=_failure(record, config.trial_timeout_s, log), outputs=load_outputs(request.out_dir))
    # The window's pace, not its median step (compare_runs says why): what the verdicts divide.
    step_times, sample_times = run.times(per_sample=False), run.times(per_sample=True)
    run.step_s = statistics.fmean(step_times) if step_times else None
    run.sample_s = statistics.fmean(sample_times) if sample_times else None
    return run


def run_trial(script: Path, args: Sequence[str], config: TuneConfig, request: RunRequest, *, index: int,
              knob: str | None) -> Trial:
    """One run as trial `index` of its own, of `knob` (None: the baseline), no side-by-side
    judgement: for callers that only measure."""
    run = observe_run(script, args, config, request)
    knobs = request.knobs
    trial = Trial(index=index, knob=knob, value=knobs.get(knob) if knob else None, knobs=dict(knobs), runs=[run])
    if run.failure:
        trial.status, trial.reason = run.failure
    return trial
