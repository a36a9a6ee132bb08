"""`torchdoctor check`: a performance gate for CI. Observes side A (a git ref checked out into a
temporary worktree, another interpreter, or a stored baseline) and side B (the code as it is now),
decides with `torchdoctor.bench` whether B is slower beyond `max_slowdown` (and its peak memory
beyond `max_memory_growth`), locates a regression with one profiled window per side, and writes
the result to the console, JSON, Markdown, JUnit XML and GitHub annotations.

Method (docs/check.md): one unmeasured pilot observation per side first (it catches a side that
fails before any time is spent, and tells the batch sizes); then interleaved rounds
(`bench.run_interleaved`): each round observes A, B and A again (the A-vs-A control), in a seeded
random order, each a fresh process (forked from a server that has imported torch, unless
`fork_server` is off) timing `steps` steps after `warmup_steps`; a sample is the mean step time
of one observation (its pace, `analyse.check.observation_figures`). The gate's stopping rule
(`analyse.check.gate_settled`) ends a clear case at the first look. A stored baseline cannot be
interleaved: its observations are compared unpaired with rounds of B, at the same looks.
"""

from __future__ import annotations

import atexit
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Sequence

import orjson
from rich.console import Console

from torchdoctor.analyse import analyse_record
from torchdoctor.analyse.check import (
    BASELINE_LIMITS, ERROR, OP_SHARE, PASS, REGRESSION, SAVED, UNDECIDED, CheckResult, Location, Metric,
    baseline_document, compare_figures, decide, findings_changes, fingerprint, fingerprint_differences, gate_settled,
    grown_rows, memory_changes, metric_from_verdict, observation_figures, operator_coverage, phase_changes,
    read_baseline, reason_for, time_gate,
)
from torchdoctor.bench import Policy, RoundInfo, compare_samples, run_interleaved
from torchdoctor.bench.adaptive import look_schedule
from torchdoctor.errors import CheckError
from torchdoctor.jsonguard import JsonBoundError, loads_bounded
from torchdoctor.observe import LaunchConfig, ObserveConfig, observe
from torchdoctor.observe.forkserver import ForkServer, ForkServerError
from torchdoctor.observe.stops import StopLog, held_stops, signal_name
from torchdoctor.record import Record, new_run_id
from torchdoctor.report.check import CheckProgress, write_outputs
from torchdoctor.rules import diagnose_record
from torchdoctor.store import DEFAULT_STORE, RunStore
from torchdoctor.workflow import worktree

#: Lines of a failing side's output quoted in the error.
LOG_TAIL_LINES = 25


@dataclass(frozen=True, kw_only=True)
class CheckOptions:
    """How strict the gate is and how long it may measure (the CLI's options, docs/check.md)."""

    max_slowdown: float = 0.05
    max_memory_growth: float = 0.10
    budget_s: float = 300.0
    warmup_steps: int = 3
    steps: int = 10
    timed_window_s: float = 0.5
    min_rounds: int = 5
    max_rounds: int = 400
    min_effect: float = 0.02
    confidence: float = 0.95
    aa_control: bool = True
    seed: int = 0
    timeout_s: float = 600.0
    memory: bool = True
    locate: bool = True
    fork_server: bool = True
    same_cwd: bool = False

    def __post_init__(self) -> None:
        for name in ("max_slowdown", "max_memory_growth"):
            if not 0.0 < getattr(self, name) < 1.0:
                raise ValueError(f"{name} must be a fraction in (0, 1), e.g. 0.05 for 5%; got {getattr(self, name)}")
        if not 0.0 <= self.min_effect < self.max_slowdown:
            raise ValueError(f"min_effect must be in [0, max_slowdown), got {self.min_effect}")
        if self.budget_s <= 0 or self.timeout_s <= 0:
            raise ValueError("budget and timeout must be positive")
        if self.timed_window_s < 0:
            raise ValueError(f"timed_window_s must be >= 0 (0: exactly --steps), got {self.timed_window_s}")
        ObserveConfig(warmup_steps=self.warmup_steps, timing_steps=self.steps)  # raises ValueError when off
        Policy(self.min_rounds, self.max_rounds, self.budget_s, self.min_effect, self.confidence, self.aa_control,
               self.seed)

    def observe_config(self, *, profile: bool = False) -> ObserveConfig:
        if profile:  # a short timing window, then the profiler's: wait 1, warm-up 1, 3 steps recorded
            return ObserveConfig(warmup_steps=self.warmup_steps, timing_steps=2, profile=True, memory=False,
                                 threads_probe=False)
        return ObserveConfig(warmup_steps=self.warmup_steps, timing_steps=self.steps, profile=False,
                             memory=self.memory, threads_probe=False)

    def policy(self, budget_left_s: float, round_s: float) -> Policy:
        """The rounds' policy once a pilot has shown what one round costs (`round_s`): as many rounds as
        the budget left holds at that pace, between `min_rounds` and `max_rounds`. Planned before the
        first round, so the looks' correction counts only looks that can happen; a short step thus
        gets the many rounds that the noise between processes (which more steps per observation do
        not reduce) needs, and a long one is not judged over looks it will never reach."""
        budget_left_s = max(budget_left_s, 1e-3)
        fit = int(budget_left_s // max(round_s, 1e-3))
        rounds = max(self.min_rounds, min(self.max_rounds, fit))
        return Policy(self.min_rounds, rounds, budget_left_s, self.min_effect, self.confidence, self.aa_control,
                      self.seed)

    def settings(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


@dataclass(frozen=True, kw_only=True)
class CheckOutputs:
    """Where the result goes: JSON ('-': stdout), Markdown, JUnit XML, annotations, the console;
    `store_path`: the run store (stored baselines; the check's artefacts go beside it); `progress`:
    the progress display on stderr."""

    json_out: str | None = None
    markdown_out: Path | None = None
    junit_out: Path | None = None
    annotations: bool = False
    console: Console | None = None
    store_path: Path = DEFAULT_STORE
    progress: bool = True


@dataclass(slots=True)
class Side:
    """One side of the comparison: what runs, where, with which interpreter."""

    name: str  # "A" (reference) or "B" (now)
    label: str
    script: Path
    cwd: str
    python: str = sys.executable
    python_path: list[str] = field(default_factory=list)
    server: ForkServer | None = None
    info: dict[str, Any] = field(default_factory=dict)

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "label": self.label, "script": str(self.script), "cwd": self.cwd,
                "python": self.python, **self.info}


# -- fork servers, kept for the life of the process (the tests and the benchmark run many checks) --
_SERVERS: dict[str, ForkServer] = {}


def _server(python: str) -> ForkServer:
    server = _SERVERS.get(python)
    if server is None or not server.alive:
        server = _SERVERS[python] = ForkServer(python).start()
    return server


@atexit.register
def _close_servers() -> None:
    for server in _SERVERS.values():
        server.close()
    _SERVERS.clear()


# -- observing the sides ------------------------------------------------------------------------------
class _Runner:
    """Observes the sides one observation at a time; keeps each side's figures; turns a failed,
    timed-out or interrupted observation into CheckError or KeyboardInterrupt."""

    def __init__(self, sides: Sequence[Side], args: Sequence[str], options: CheckOptions, work_dir: Path,
                 progress: CheckProgress, stops: StopLog) -> None:
        self.sides = {s.name: s for s in sides}
        self.args, self.options, self.work_dir, self.progress = list(args), options, work_dir, progress
        self.stops = stops
        self.count = 0
        self.figures: dict[str, list[dict[str, Any]]] = {s.name: [] for s in sides}
        self.metric = "step_s"

    def start_servers(self) -> None:
        if not self.options.fork_server:
            return
        for side in self.sides.values():
            side.server = _server(side.python)
        for python, side in {side.python: side for side in self.sides.values()}.items():  # one per interpreter
            self.progress.phase(f"starting the fork server ({python})")
            try:
                side.server.wait_ready()
            except ForkServerError as exc:
                raise CheckError(f"side {side.name} ({side.label}): {exc}", kind="side_failed",
                                 side=side.name) from None

    def observe(self, name: str, *, purpose: str = "round", profile: bool = False) -> Record:
        if self.stops.requested:  # a stop held between observations: start no other one
            raise KeyboardInterrupt
        side = self.sides[name]
        self.count += 1
        tag = f"{self.count:03d}-{name}-{purpose}"
        log = self.work_dir / f"{tag}.log"
        launch = LaunchConfig(timeout_s=self.options.timeout_s, cwd=side.cwd, python_path=side.python_path,
                              log_path=str(log), server=side.server, python=None if side.server else side.python)
        record = observe(side.script, self.args, self.options.observe_config(profile=profile), launch,
                         out_dir=self.work_dir / tag)
        self._raise_on_failure(side, record, log)
        if not profile:
            shutil.rmtree(self.work_dir / tag, ignore_errors=True)  # the Record holds what it measured
        return record

    def measure(self, name: str) -> float:
        """One observation of side `name`: its sample for the gate (median step or per-sample time)."""
        figures = observation_figures(self.observe(name))
        self.figures[name].append(figures)
        value = figures[self.metric]
        if not value:
            raise CheckError(f"side {name} measured no {self.metric.replace('_s', '')} time", kind="side_failed",
                             side=name)
        return value

    def _raise_on_failure(self, side: Side, record: Record, log: Path) -> None:
        """A stop that torchdoctor passed on to the script (Ctrl-C, SIGTERM) ends the check as a
        Ctrl-C here would: `KeyboardInterrupt`, which the check turns into an undecided result."""
        who = f"side {side.name} ({side.label})"
        if record.exit.reason == "timeout":
            raise CheckError(f"{who} timed out: one observation ran longer than {self.options.timeout_s:g} s "
                             "(--timeout)", kind="side_failed", side=side.name, detail=_tail(log))
        if record.exit.reason == "interrupted":
            raise KeyboardInterrupt
        if record.exit.status != 0 or not record.steps:
            lines = (record.exit.traceback or "").strip().splitlines()
            what = lines[-1] if lines else record.exit.message or "no step was measured"
            raise CheckError(f"{who} failed ({record.exit.reason}): {what}", kind="side_failed", side=side.name,
                             detail=record.exit.traceback or _tail(log) or record.exit.message)


def _tail(log: Path) -> str:
    try:
        return "\n".join(log.read_text(errors="replace").splitlines()[-LOG_TAIL_LINES:])
    except OSError:
        return ""


def _choose_metric(result: CheckResult, a: dict[str, Any], b: dict[str, Any]) -> str:
    """The time per sample when the batch sizes differ (a bigger batch is not a slower step), else the step."""
    if a.get("batch_size") and b.get("batch_size") and a["batch_size"] != b["batch_size"] and a.get("sample_s"):
        result.warnings.append(f"the batch sizes differ (A {a['batch_size']}, B {b['batch_size']}): the gate "
                               "compares the time per sample, not per step")
        return "sample_s"
    return "step_s"


_METRIC_LABELS = {"step_s": ("step_time", "step time"), "sample_s": ("time_per_sample", "time per sample")}


def _secondary_metrics(options: CheckOptions, a: list[dict[str, Any]], b: list[dict[str, Any]],
                       gate_metric: str) -> list[Metric]:
    """Samples/s, peak memory (gated), compile time and, when the gate is per sample, the step time."""
    def values(figures: list[dict[str, Any]], key: str) -> list[Any]:
        return [f.get(key) for f in figures]

    common = {"min_effect": options.min_effect, "confidence": options.confidence, "seed": options.seed}
    metrics = []
    if gate_metric != "step_s":
        metrics.append(compare_figures("step_time", "step time", values(a, "step_s"), values(b, "step_s"), unit="s",
                                       better="lower", **common))
    metrics.append(compare_figures("samples_per_s", "samples/s", values(a, "samples_per_s"), values(b, "samples_per_s"),
                                   unit="samples/s", better="higher", **common))
    if options.memory:
        memory = compare_figures("peak_memory", "peak memory", values(a, "peak_bytes"), values(b, "peak_bytes"),
                                 unit="bytes", better="lower", threshold=options.max_memory_growth, **common)
        if memory is not None:
            methods = {f.get("memory_method") for f in a + b if f.get("memory_method")}
            memory.note = (memory.note + "; " if memory.note else "") + "measured by " + ", ".join(sorted(methods))
            if memory.gate is not None and (memory.n_a == 0 or memory.n_b == 0):
                memory.gate = None
        metrics.append(memory)
    metrics.append(compare_figures("compile_time", "compile time", values(a, "compile_s"), values(b, "compile_s"),
                                   unit="s", better="lower", **common))
    return [m for m in metrics if m is not None]


# -- the context shared by every mode ------------------------------------------------------------------
class _Check:
    """One check being run: its result (filled as it goes), work folder, progress display."""

    def __init__(self, mode: str, script: str | None, args: Sequence[str], options: CheckOptions,
                 outputs: CheckOutputs) -> None:
        self.options, self.outputs = options, outputs
        self.original_steps = options.steps
        self.console = outputs.console or Console(stderr=outputs.json_out == "-")
        self.started = time.monotonic()
        self.check_id = "check-" + new_run_id()
        self.work_dir = Path(outputs.store_path).resolve().parent / "check" / self.check_id
        self.result = CheckResult(decision=UNDECIDED, reason="", mode=mode, script=script, argv=list(args),
                                  settings=options.settings(), work_dir=str(self.work_dir))
        self.progress = CheckProgress(Console(stderr=True, quiet=not outputs.progress))
        self._runner: _Runner | None = None
        self.stops = StopLog()  # replaced by the held stops' log while `run` runs

    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def stop_name(self) -> str:
        """The stop that interrupted the check: "Ctrl-C" for SIGINT, else the signal's name."""
        first = self.stops.first
        return "Ctrl-C" if first is None or signal_name(first) == "SIGINT" else signal_name(first)

    def run(self, body: Callable[[_Check], None]) -> CheckResult:
        result = self.result
        self.work_dir.mkdir(parents=True, exist_ok=True)
        # Stop signals are held (recorded, never raised) for the whole check: one in flight is passed on
        # to the observation running (which then ends as interrupted), one between observations
        # starts no other; either way what was measured is decided and written to every output.
        with held_stops() as self.stops:
            try:
                with self.progress:
                    body(self)
            except CheckError as exc:
                result.decision, result.reason = ERROR, str(exc)
                result.error = {"kind": exc.kind, "side": exc.side, "message": str(exc), "detail": exc.detail}
            except KeyboardInterrupt:
                if result.stop_reason != "interrupted":  # before any round completed
                    result.decision, result.stop_reason = UNDECIDED, "interrupted"
                    result.reason = (f"interrupted ({self.stop_name()}) after {result.rounds} complete round(s)"
                                     + ("" if result.rounds else ": nothing was measured"))
            result.wall_s = self.elapsed()
            if self._runner is not None:
                result.observations = self._runner.count
            if self.work_dir.is_dir() and not any(self.work_dir.iterdir()):
                self.work_dir.rmdir()
                result.work_dir = None
            write_outputs(result, console=self.console, json_out=self.outputs.json_out,
                          markdown_out=self.outputs.markdown_out, junit_out=self.outputs.junit_out,
                          annotations=self.outputs.annotations)
        return result

    def runner(self, sides: Sequence[Side], args: Sequence[str]) -> _Runner:
        self.result.a = sides[0].describe() if sides[0].name == "A" else self.result.a
        self.result.b = sides[-1].describe()
        runner = self._runner = _Runner(sides, args, self.options, self.work_dir, self.progress, self.stops)
        runner.start_servers()
        return runner


# -- interleaved modes: a git ref, another interpreter -----------------------------------------------------
def _interleaved(check: _Check, runner: _Runner) -> None:
    """Pilot, interleaved rounds, verdict; on a regression, where it lives."""
    result = check.result
    pilots, pilot_s, lengthened = {}, {}, False
    for name in ("A", "B"):
        check.progress.phase(f"pilot run of {name} ({runner.sides[name].label})")
        start = time.monotonic()
        pilots[name] = runner.observe(name, purpose="pilot")
        pilot_s[name] = time.monotonic() - start
        if name == "A":  # B's pilot tries the window the rounds will time
            lengthened = _lengthen_window(check, runner, pilots["A"])
    _note_envs(result, pilots["A"], pilots["B"])
    if lengthened and len(pilots["B"].steps) < check.options.steps:
        _keep_steps(check, runner, pilots["B"])
    options = check.options
    fig_a, fig_b = observation_figures(pilots["A"]), observation_figures(pilots["B"])
    runner.metric = result.gate_metric = _choose_metric(result, fig_a, fig_b)
    extra_a_s = (options.steps - len(pilots["A"].steps)) * (fig_a["step_s"] or 0.0)  # A's pilot timed fewer
    round_s = (pilot_s["A"] + extra_a_s) * (2 if options.aa_control else 1) + pilot_s["B"]
    policy = options.policy(options.budget_s - check.elapsed(), round_s)
    result.planned_rounds = policy.max_rounds
    looks = look_schedule(policy)
    look_conf = 1.0 - (1.0 - options.confidence) / len(looks)  # as run_interleaved's, one comparison

    def on_round(info: RoundInfo) -> None:
        result.rounds = info.rounds_done
        check.progress.round(info, check.elapsed(), options.budget_s)

    bench = run_interleaved(runner.measure, ["A", "B"], policy=policy, on_round=on_round,
                            settled=gate_settled(options.max_slowdown, look_conf, options.confidence),
                            stop_on_interrupt=True)
    result.rounds, result.stop_reason, result.aa_ratio = bench.rounds, bench.stop_reason, bench.aa_ratio
    result.observations = runner.count
    result.samples_s = bench.samples_s
    result.warnings.extend(bench.warnings)
    name, label = _METRIC_LABELS[runner.metric]
    a_samples, b_samples = bench.samples_s["A"], bench.samples_s["B"]
    time_metric = metric_from_verdict(name, label, bench.verdicts["B"], a_samples, b_samples,
                                      threshold=options.max_slowdown, confidence=bench.look_confidence,
                                      pass_confidence=options.confidence)
    time_metric.note = (f"95% CI over all {len(looks)} looks (each look at {100 * bench.look_confidence:.2f}%); "
                        f"paired by round; A-vs-A {_ratio_text(bench.aa_ratio)}")
    a_figures = runner.figures["A"][:]  # A and A (again): both are A
    b_figures = runner.figures["B"][:]
    result.metrics = [time_metric, *_secondary_metrics(options, a_figures, b_figures, runner.metric)]
    _conclude(check, runner, a_figures, b_figures)


#: However short the step, an observation times at most this many times `--steps` steps.
MAX_STEPS_FACTOR = 10


def _lengthen_window(check: _Check, runner: _Runner, pilot: Record) -> bool:
    """Time more than `--steps` steps per observation when steps are short, so that each observation
    times about `--timed-window` seconds (at most MAX_STEPS_FACTOR x `--steps` steps); True when it did.

    Measured on healthy_mlp (a 9 ms step, 2-core VM shared with other jobs, 30 observations each,
    fork server): the spread of one observation's median step (the sample then; sd of the log
    ratio of consecutive observations) was 0.49 with 10 timed steps and 0.28 with 40, for 2.2x the
    wall time of an observation (0.37 s and 0.80 s): the same precision in about 1.5x less time.
    Short steps are noisy one by one; the fixed cost of an observation (start, warm-up, memory
    step) is what longer windows spread. A long step keeps `--steps`."""
    options = check.options
    step_s = observation_figures(pilot)["step_s"]
    if not options.timed_window_s or not step_s:
        return False
    steps = min(options.steps * MAX_STEPS_FACTOR, max(options.steps, math.ceil(options.timed_window_s / step_s)))
    if steps == options.steps:
        return False
    check.options = runner.options = replace(options, steps=steps)
    check.result.settings = check.options.settings()
    check.progress.phase(f"{steps} timed steps per observation ({1e3 * step_s:.1f} ms per step)")
    return True


def _keep_steps(check: _Check, runner: _Runner, probe: Record) -> None:
    """The script ended before the lengthened window was full: back to `--steps`, with a warning."""
    check.result.warnings.append(f"the script ended after {len(probe.steps)} timed steps, before the "
                                 f"{check.options.steps} planned for its short steps: each observation "
                                 f"times --steps {check.original_steps}")
    check.options = runner.options = replace(check.options, steps=check.original_steps)
    check.result.settings = check.options.settings()


def _ratio_text(value: float | None) -> str:
    return "not measured (--no-aa)" if value is None else f"ratio {value:.4f}"


def _note_envs(result: CheckResult, a: Record, b: Record) -> None:
    fa, fb = fingerprint(a.env), fingerprint(b.env)
    result.env = {"a": fa, "b": fb, "differences": fingerprint_differences(fa, fb)}
    result.a.setdefault("torch", fa.get("torch"))
    result.b.setdefault("torch", fb.get("torch"))


def _conclude(check: _Check, runner: _Runner | None, a_figures: list[dict[str, Any]],
              b_figures: list[dict[str, Any]]) -> None:
    """Decision and reason from the metrics; an interrupted check is undecided; locate a regression."""
    result, options = check.result, check.options
    result.decision = decide(result.metrics)
    if result.stop_reason == "interrupted":
        result.decision = UNDECIDED
    result.reason = reason_for(result.decision, result.metrics, stop_reason=result.stop_reason,
                               rounds=result.rounds, budget_s=options.budget_s, stopped_by=check.stop_name())
    if result.decision == REGRESSION:
        result.location = _locate(check, runner, a_figures, b_figures)


def _locate(check: _Check, runner: _Runner | None, a_figures: list[dict[str, Any]],
            b_figures: list[dict[str, Any]]) -> Location:
    """Phases from the rounds; memory categories; operators, kernels and findings from one profiled
    observation per side (skipped with --no-locate, or when a side is a stored baseline)."""
    result = check.result
    location = Location(phases=phase_changes(a_figures, b_figures))
    memory = result.metric("peak_memory")
    if memory is not None and memory.gate == REGRESSION:
        location.memory_categories = memory_changes(a_figures, b_figures)
    time_metric = result.metrics[0]
    if time_metric.gate != REGRESSION:
        return location
    if runner is None or "A" not in runner.sides:
        location.notes.append("side A is a stored baseline: no profile of it to diff against")
        return location
    if not check.options.locate:
        location.notes.append("profiling skipped (--no-locate)")
        return location
    try:
        _profile_and_diff(check, runner, location)
    except KeyboardInterrupt:
        location.notes.append(f"interrupted ({check.stop_name()}) while profiling: operators not located")
    except CheckError as exc:
        location.notes.append(f"profiling failed: {exc}")
    return location


def _profile_and_diff(check: _Check, runner: _Runner, location: Location) -> None:
    from torchdoctor.trace import diff_traces

    records = {}
    for name in ("A", "B"):
        check.progress.phase(f"profiling {name} to locate the slowdown")
        records[name] = analyse_record(runner.observe(name, purpose="profile", profile=True), lint=False)
    traces = {name: (r.artifacts.get("traces") or [None])[0] for name, r in records.items()}
    location.traces = traces
    if traces["A"] and traces["B"]:
        diff = diff_traces(traces["A"], traces["B"])
        step_delta_s = sum(p["delta_s"] for p in location.phases)
        floor_us = OP_SHARE * step_delta_s * 1e6
        location.ops = grown_rows(diff.ops, min_delta_us=floor_us)
        location.kernels = grown_rows(diff.kernels, min_delta_us=floor_us)
        note = operator_coverage(diff.ops, step_delta_s)
        if note:
            location.notes.append(note)
    else:
        location.notes.append("a side wrote no profiler trace: operators not compared")
    findings = {name: diagnose_record(r) for name, r in records.items()}
    location.findings_appeared, location.findings_vanished = findings_changes(findings["A"], findings["B"])


def _tree_paths(tree: Path) -> list[str]:
    """A tree's own code first on the import path: its src/ folder (src layout) and its root, so an
    editable install of the project does not make both sides run the working tree's code."""
    return [str(p) for p in (tree / "src", tree) if p.is_dir()]


def _script_path(script: str) -> Path:
    path = Path(script)
    if not path.is_file():
        raise CheckError(f"script not found: {script}", kind="input")
    return path.resolve()


def check_against_ref(script: str, args: Sequence[str], ref: str, options: CheckOptions,
                      outputs: CheckOutputs = CheckOutputs(), *, mode: str = "ref") -> CheckResult:
    """Compare the working tree (B) with REF (A), interleaved on this machine."""
    check = _Check(mode, script, args, options, outputs)

    def body(check: _Check) -> None:
        path = _script_path(script)
        root = worktree.find_repo(path.parent)
        relative = path.relative_to(root)
        commit = worktree.resolve_ref(root, ref)
        result = check.result
        result.script = relative.as_posix()
        result.a = {"name": "A", "label": f"{ref} ({commit[:7]})", "ref": ref, "commit": commit,
                    "subject": worktree.describe(root, commit)}
        result.dirty_files = worktree.dirty_files(root)
        result.dirty = bool(result.dirty_files)
        head = worktree.head_commit(root)
        b_label = "working tree" + (" (uncommitted changes)" if result.dirty else f" ({head[:7]})" if head else "")
        if result.dirty:
            result.warnings.append(
                f"the working tree has uncommitted changes ({len(result.dirty_files)} file(s)): the working tree, "
                f"as it is, is compared against {ref}")
        if not worktree.exists_at(root, commit, relative):
            raise CheckError(f"{relative.as_posix()} does not exist at {ref} ({commit[:7]}): nothing to compare "
                             "against", kind="bad_ref", side="A")
        cwd = Path.cwd().resolve()
        with worktree.temporary_worktree(root, commit) as tree:
            a_cwd = cwd if options.same_cwd or not cwd.is_relative_to(root) else tree / cwd.relative_to(root)
            if not a_cwd.is_dir():
                a_cwd = tree
            side_a = Side("A", result.a["label"], tree / relative, str(a_cwd), python_path=_tree_paths(tree),
                          info={k: v for k, v in result.a.items() if k not in ("name", "label")})
            side_b = Side("B", b_label, path, str(cwd), python_path=_tree_paths(root),
                          info={"commit": head, "dirty": result.dirty})
            runner = check.runner([side_a, side_b], args)
            _interleaved(check, runner)

    return check.run(body)


def check_against_python(script: str, args: Sequence[str], python: str, options: CheckOptions,
                         outputs: CheckOutputs = CheckOutputs()) -> CheckResult:
    """Compare this interpreter (B) with PYTHON (A) on the same code, interleaved."""
    check = _Check("python", script, args, options, outputs)

    def body(check: _Check) -> None:
        path = _script_path(script)
        other = _probe_python(python)
        cwd = os.getcwd()
        side_a = Side("A", f"{other['executable']} (torch {other['torch']})", path, cwd, python=other["executable"],
                      info={"torch": other["torch"], "python_version": other["python"]})
        side_b = Side("B", f"{sys.executable}", path, cwd, info={})
        _interleaved(check, check.runner([side_a, side_b], args))

    return check.run(body)


def _probe_python(python: str) -> dict[str, Any]:
    """The other interpreter's versions; CheckError when it cannot run torch and torchdoctor."""
    found = shutil.which(python) or python
    if not (os.path.isfile(found) and os.access(found, os.X_OK)):
        raise CheckError(f"--against-python {python}: not an executable interpreter", kind="bad_python", side="A")
    code = ("import json, sys, torch, torchdoctor.observe.forkserver; "
            "print(json.dumps({'executable': sys.executable, 'python': sys.version.split()[0], "
            "'torch': torch.__version__}))")
    try:
        proc = subprocess.run([found, "-c", code], capture_output=True, text=True, timeout=300)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise CheckError(f"--against-python {python} cannot run: {exc}", kind="bad_python", side="A") from None
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise CheckError(f"--against-python {python} cannot import torch and torchdoctor ({last}); install "
                         "torchdoctor in that environment", kind="bad_python", side="A", detail=proc.stderr[-4000:])
    info = orjson.loads(proc.stdout.strip().splitlines()[-1])
    info["executable"] = found  # keep the path given (a venv's python is often a link to the same binary)
    return info


# -- stored baselines ----------------------------------------------------------------------------------------
def _baseline_source(name: str) -> str:
    """'file' for a JSON file next to the code (NAME ends in .json or holds a path), else 'store'."""
    return "file" if name.endswith(".json") or "/" in name or os.sep in name else "store"


def _write_baseline(name: str, document: dict[str, Any], store_path: Path) -> str:
    if _baseline_source(name) == "file":
        Path(name).parent.mkdir(parents=True, exist_ok=True)
        Path(name).write_bytes(orjson.dumps(document, option=orjson.OPT_INDENT_2))
        return str(Path(name))
    with RunStore(store_path) as store:
        store.save_baseline(name, document)
    return f"{store_path} (baseline {name!r})"


def _read_baseline(name: str, store_path: Path) -> dict[str, Any]:
    if _baseline_source(name) == "file":
        try:
            data = loads_bounded(Path(name).read_bytes(), BASELINE_LIMITS)
        except OSError as exc:
            raise CheckError(f"cannot read baseline {name}: {exc.strerror}", kind="bad_baseline") from None
        except (JsonBoundError, orjson.JSONDecodeError) as exc:
            raise CheckError(f"baseline {name} is not JSON within bounds: {exc}", kind="bad_baseline") from None
    else:
        with RunStore(store_path) as store:
            data = store.load_baseline(name)
            known = store.baselines()
        if data is None:
            listed = ", ".join(known) if known else "none yet"
            raise CheckError(f"no baseline {name!r} in {store_path} (stored: {listed}); record one with "
                             f"`torchdoctor check --save-baseline {name} -- SCRIPT`", kind="bad_baseline")
    try:
        return read_baseline(data, f"baseline {name}")
    except ValueError as exc:
        raise CheckError(str(exc), kind="bad_baseline") from None


def _git_state(path: Path) -> tuple[str | None, bool]:
    try:
        root = worktree.find_repo(path.parent)
    except CheckError:
        return None, False
    return worktree.head_commit(root), bool(worktree.dirty_files(root))


def save_baseline(script: str, args: Sequence[str], name: str, options: CheckOptions,
                  outputs: CheckOutputs = CheckOutputs()) -> CheckResult:
    """Observe the script `2 * min_rounds` times (within the budget) and keep the figures as NAME."""
    check = _Check("save-baseline", script, args, options, outputs)

    def body(check: _Check) -> None:
        result = check.result
        path = _script_path(script)
        commit, dirty = _git_state(path)
        side = Side("B", "this tree", path, os.getcwd(), info={"commit": commit, "dirty": dirty})
        runner = check.runner([side], args)
        check.progress.phase("pilot run")
        pilot = runner.observe("B", purpose="pilot")
        if _lengthen_window(check, runner, pilot):
            probe = runner.observe("B", purpose="pilot")
            if len(probe.steps) < check.options.steps:
                _keep_steps(check, runner, probe)
        options = check.options
        wanted = 2 * options.min_rounds
        for done in range(1, wanted + 1):
            runner.measure("B")
            result.rounds = done
            check.progress.round(RoundInfo(done, wanted, check.elapsed(), options.budget_s), check.elapsed(),
                                 options.budget_s)
            if done < wanted and check.elapsed() * (done + 1) / done > options.budget_s:
                result.warnings.append(f"the budget of {options.budget_s:g} s allowed {done} of {wanted} observations")
                break
        figures = runner.figures["B"]
        result.observations, result.samples_s = runner.count, {"B": [f["step_s"] for f in figures]}
        document = baseline_document(
            name=name, script=path.name, argv=args, created_at=pilot.created_at, commit=commit, dirty=dirty,
            env=pilot.env, settings={"warmup_steps": options.warmup_steps, "steps": options.steps},
            observations=figures)
        where = _write_baseline(name, document, check.outputs.store_path)
        result.env = {"b": document["fingerprint"]}
        result.baseline = {"name": name, "saved_to": where, "noise": document["noise"],
                           "observations": len(figures), "fingerprint": document["fingerprint"]}
        result.metrics = [m for m in _secondary_metrics(options, [], figures, "step_s") if m is not None]
        result.metrics.insert(0, compare_figures("step_time", "step time", [], [f["step_s"] for f in figures],
                                                 unit="s", better="lower", min_effect=options.min_effect))
        result.decision = SAVED
        result.reason = (f"baseline {name!r} saved to {where}: {len(figures)} observations of "
                         f"{options.steps} steps")

    return check.run(body)


def check_against_baseline(script: str, args: Sequence[str], name: str, options: CheckOptions,
                           outputs: CheckOutputs = CheckOutputs()) -> CheckResult:
    """Compare this tree (B) with a stored baseline (A), refusing one from another environment."""
    check = _Check("baseline", script, args, options, outputs)

    def body(check: _Check) -> None:
        result = check.result
        document = _read_baseline(name, check.outputs.store_path)
        result.baseline = {k: document.get(k) for k in ("name", "created_at", "commit", "dirty", "script", "argv",
                                                        "noise", "settings")}
        result.baseline["source"] = _baseline_source(name)
        result.a = {"name": "A", "label": f"baseline {name!r} ({document.get('created_at', '?')})",
                    "commit": document.get("commit")}
        path = _script_path(script)
        if document.get("script") and document["script"] != path.name:
            result.warnings.append(f"the baseline measured {document['script']}, this check runs {path.name}")
        settings = document.get("settings") or {}
        opts = options
        if settings and (settings.get("warmup_steps"), settings.get("steps")) != (options.warmup_steps, options.steps):
            opts = CheckOptions(**{**options.settings(), "warmup_steps": settings["warmup_steps"],
                                   "steps": settings["steps"]})
            result.warnings.append(f"the baseline's windows are used: --warmup-steps {settings['warmup_steps']} "
                                   f"--steps {settings['steps']}")
            check.options = opts
        commit, dirty = _git_state(path)
        side = Side("B", "this tree", path, os.getcwd(), info={"commit": commit, "dirty": dirty})
        result.dirty = dirty
        runner = check.runner([side], args)
        runner.options = opts
        check.progress.phase("pilot run")
        start = time.monotonic()
        pilot = runner.observe("B", purpose="pilot")
        pilot_s = time.monotonic() - start
        here = fingerprint(pilot.env)
        differences = fingerprint_differences(document["fingerprint"], here)
        result.env = {"a": document["fingerprint"], "b": here, "differences": differences}
        if differences:
            listed = "; ".join(f"{d['key']}: {d['a']!r} (baseline) vs {d['b']!r} (here)" for d in differences)
            raise CheckError(f"baseline {name!r} was recorded in another environment ({listed}); a comparison across "
                             "environments measures the machine, not the code: record a baseline on this kind of "
                             "machine (--save-baseline) or compare against a git ref (--against)",
                             kind="env_mismatch")
        base = document["observations"]
        runner.metric = result.gate_metric = _choose_metric(result, base[0], observation_figures(pilot))
        _against_samples(check, runner, base, floor=max(opts.min_effect, document.get("noise") or 0.0),
                         round_s=pilot_s)

    return check.run(body)


def _against_samples(check: _Check, runner: _Runner, base: list[dict[str, Any]], *, floor: float,
                     round_s: float) -> None:
    """Rounds of B alone, judged unpaired against the stored figures at the bench's looks."""
    options, result = check.options, check.result
    policy = options.policy(options.budget_s - check.elapsed(), round_s)
    result.planned_rounds = policy.max_rounds
    looks = look_schedule(policy)
    look_conf = 1.0 - (1.0 - options.confidence) / len(looks)
    base_samples = [f[runner.metric] for f in base if f.get(runner.metric)]
    samples: list[float] = []
    verdict = None
    start = time.monotonic()
    result.stop_reason = "max_rounds"

    def judge() -> Any:
        return compare_samples(base_samples, samples, min_effect=min(floor, 0.99), confidence=look_conf,
                               seed=options.seed)

    try:
        for done in range(1, policy.max_rounds + 1):
            samples.append(runner.measure("B"))
            result.rounds = done
            elapsed = time.monotonic() - start
            check.progress.round(RoundInfo(done, policy.max_rounds, elapsed, policy.budget_s), check.elapsed(),
                                 options.budget_s)
            if done in looks:
                verdict = judge()
                if time_gate(verdict, options.max_slowdown, final=False, look_confidence=look_conf,
                             confidence=options.confidence) != UNDECIDED:
                    result.stop_reason = "settled"
                    break
            if done < policy.max_rounds and elapsed * (done + 1) / done > policy.budget_s:
                result.stop_reason = "budget"
                break
    except KeyboardInterrupt:
        result.stop_reason = "interrupted"
    verdict = judge()
    result.observations, result.samples_s = runner.count, {"baseline": base_samples, "B": samples}
    name, label = _METRIC_LABELS[runner.metric]
    time_metric = metric_from_verdict(name, label, verdict, base_samples, samples, threshold=options.max_slowdown,
                                      confidence=look_conf, pass_confidence=options.confidence)
    time_metric.note = (f"95% CI over all {len(looks)} looks; unpaired against the stored observations; noise floor "
                        "= max(--min-effect, the baseline's own half-to-half difference)")
    result.metrics = [time_metric, *_secondary_metrics(options, base, runner.figures["B"], runner.metric)]
    _conclude(check, runner, base, runner.figures["B"])


# -- the demo ----------------------------------------------------------------------------------------------
#: The demo's deliberate regression, a plausible change: the tokeniser hashes its character n-grams with
#: blake2b instead of crc32 ("fewer collisions"), which makes the data pipeline, and so every step of
#: this data-bound workload, about 50-80% slower.
_DEMO_SLOWDOWN = (
    ("import zlib\n", "import hashlib\nimport zlib\n"),
    ("        ids.append(sum(zlib.crc32(g.encode()) % 7919 for g in grams) % (VOCAB_SIZE - 1) + 1)\n",
     '        ids.append(sum(int.from_bytes(hashlib.blake2b(g.encode(), digest_size=4).digest(), "little") % 7919\n'
     "                       for g in grams) % (VOCAB_SIZE - 1) + 1)\n"),
)
DEMO_ARGS = ("--batch-size", "4")


@contextmanager
def demo_repository() -> Iterator[Path]:
    """A temporary git repository: commit 1 the demo script, commit 2 the same with a slower tokeniser."""
    from torchdoctor.zoo import demo_script

    holder = Path(tempfile.mkdtemp(prefix="torchdoctor-demo-"))
    try:
        repo = holder / "demo"
        repo.mkdir()
        source = slowed = demo_script().read_text()
        for old, new in _DEMO_SLOWDOWN:
            if old not in slowed:
                raise CheckError("the demo script changed: the check demo cannot slow it down", kind="input")
            slowed = slowed.replace(old, new)
        ident = ["-c", "user.name=torchdoctor", "-c", "user.email=demo@torchdoctor.invalid"]
        worktree.git(repo, "init", "--quiet")
        (repo / "demo.py").write_text(source)
        worktree.git(repo, "add", "demo.py")
        worktree.git(repo, *ident, "commit", "--quiet", "-m", "demo: a data-bound text classifier")
        (repo / "demo.py").write_text(slowed)
        worktree.git(repo, *ident, "commit", "--quiet", "-am", "tokeniser: blake2b n-gram hashes (fewer collisions)")
        yield repo
    finally:
        shutil.rmtree(holder, ignore_errors=True)


def check_demo(options: CheckOptions, outputs: CheckOutputs = CheckOutputs()) -> CheckResult:
    """The demo: commit 2 (a slower tokeniser) checked against commit 1, in a temporary repository.
    Both sides run with one intra-op thread (OMP_NUM_THREADS=1), as CPU jobs on a shared runner should:
    two threads on two busy cores wait for each other and turn the step time into noise."""
    saved = os.environ.get("OMP_NUM_THREADS")
    os.environ["OMP_NUM_THREADS"] = "1"
    try:
        with demo_repository() as repo:
            return check_against_ref(str(repo / "demo.py"), list(DEMO_ARGS), "HEAD~1", options, outputs, mode="demo")
    finally:
        if saved is None:
            os.environ.pop("OMP_NUM_THREADS", None)
        else:
            os.environ["OMP_NUM_THREADS"] = saved


__all__ = ["CheckOptions", "CheckOutputs", "check_against_baseline", "check_against_python", "check_against_ref",
           "check_demo", "demo_repository", "save_baseline", "ERROR", "PASS", "REGRESSION", "UNDECIDED"]
