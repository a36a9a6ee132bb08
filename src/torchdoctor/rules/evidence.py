"""Read-only access to the measured evidence of a Record, for the rules.

Every accessor returns a measured value or raises :class:`MissingEvidence` naming what is absent,
so a rule states what it reads and never guesses a default. Units follow the Record's key names.
"""

from __future__ import annotations

import statistics
from typing import Any, Callable, TypeVar, cast

from torchdoctor.accounting import Accounting
from torchdoctor.compile.comparison import Comparison
from torchdoctor.compile.report import CompileReport
from torchdoctor.distributed.section import DistributedSection
from torchdoctor.environment import (Cpu, DataLoaderFacts, Devices, Environment, ForwardState, LayerShape, ModelFacts,
                                     OptimizerFacts, RuntimeFacts, ScriptTools, ScriptWarning, SystemSection,
                                     SystemSummary, TorchSwitches)
from torchdoctor.errors import RecordFormatError
from torchdoctor.goodput.section import Trend, WholeRun
from torchdoctor.jsonfields import Keyed
from torchdoctor.lint import LintResult
from torchdoctor.memory.breakdown import AllocatorFigures, MemoryBreakdown
from torchdoctor.memory.report import MemoryReport
from torchdoctor.probe_values import OP_COSTS, ScriptCallsValue
from torchdoctor.record import Record
from torchdoctor.rules.base import MissingEvidence
from torchdoctor.trace.summary.device import DeviceFigures
from torchdoctor.trace.summary.facts import TraceFacts
from torchdoctor.trace.summary.legacy import legacy_window
from torchdoctor.trace.summary.rank import RankSummary
from torchdoctor.trace.summary.trace_summary import MultiRank, TraceSummary
from torchdoctor.trace.summary.window import Window

T = TypeVar("T")

REPRESENTATIVE_RATIO = 1.5  # profiled step / median timed step above which the profile was disturbed


def known(value: T | None, what: str) -> T:
    """`value`, measured; MissingEvidence naming `what` (`env.torch.num_threads`) when it is None."""
    if value is None:
        raise MissingEvidence(what)
    return value


class Evidence:
    """The evidence of one Record: step timings, environment facts, trace, memory, lint."""

    def __init__(self, record: Record) -> None:
        self.record = record
        self._sections: dict[str, object] = {}  # section name -> its typed value, None, or why it is unreadable

    def _section(self, name: str, read: Callable[[Any], T]) -> T:
        """`record.<name>` read once by its owner's `from_dict`; MissingEvidence when the section is
        absent or does not fit its type (a hand-edited or foreign Record), naming why."""
        if name not in self._sections:
            data = getattr(self.record, name)
            try:
                self._sections[name] = None if data is None else read(data)
            except RecordFormatError as exc:
                self._sections[name] = exc
        value = self._sections[name]
        if value is None:
            raise MissingEvidence(f"{name} section")
        if isinstance(value, RecordFormatError):
            raise MissingEvidence(f"a readable {name} section ({value})")
        return cast(T, value)

    # -- measured step timings ----------------------------------------------------------------
    def summary(self, key: str) -> float:
        value = getattr(self.record.summary, key, None)
        if value is None:
            raise MissingEvidence(f"summary.{key}")
        return float(value)

    def step_walls_s(self) -> list[float]:
        if not self.record.steps:
            raise MissingEvidence("measured steps")
        return [s.wall_s for s in self.record.steps]

    def data_waits_s(self) -> list[float]:
        self.step_walls_s()
        return [s.data_wait_s for s in self.record.steps]

    def steady_data_wait_fraction(self) -> float:
        """Median data wait over median step wall time: the wait of a typical step, so rare
        spikes (epoch starts, bursts) do not count."""
        wall = statistics.median(self.step_walls_s())
        return statistics.median(self.data_waits_s()) / wall if wall > 0 else 0.0

    def data_wait_cpu_fraction(self) -> float:
        """Main-thread CPU time inside the data waits over the waits' wall time (0: blocked, idle;
        1: the main thread computed the whole wait), over the timed steps."""
        steps = self.record.steps
        if not steps or any(s.data_wait_cpu_s is None for s in steps):
            raise MissingEvidence("steps[].data_wait_cpu_s (a Record from before it was measured)")
        wait = sum(s.data_wait_s for s in steps)
        return sum(s.data_wait_cpu_s for s in steps) / wait if wait > 0 else 0.0

    def batch_sizes(self) -> list[int]:
        sizes = [s.batch_size for s in self.record.steps if s.batch_size]
        if not sizes:
            raise MissingEvidence("steps[].batch_size")
        return sizes

    def single_sample_inference(self) -> bool:
        """A loop of forward calls only (no backward) whose typical call takes one sample."""
        if self.record.step_detection != "forward":
            return False
        try:
            return statistics.median(self.batch_sizes()) == 1
        except MissingEvidence:
            return False

    def step_detection(self) -> str:
        if not self.record.step_detection:
            raise MissingEvidence("step detection")
        return self.record.step_detection

    # -- environment facts ----------------------------------------------------------------------
    def environment(self) -> Environment:
        """`record.env` (docs/record-schema.md) read once; its parts the Record lacks are None or
        empty. MissingEvidence when it does not fit its type."""
        return self._section("env", Environment.from_dict)

    def _env_part(self, name: str) -> Any:
        """The part `name` of the environment; MissingEvidence when the Record lacks it or holds null
        (an empty list is a measured none)."""
        environment = self.environment()
        value = getattr(environment, name)
        if name not in environment.keys or value is None:
            raise MissingEvidence(f"env.{name}")
        return value

    def switches(self) -> TorchSwitches:
        """torch's switches as the script left them (`env.torch`)."""
        return cast(TorchSwitches, self._env_part("torch"))

    def devices(self) -> Devices:
        """The accelerators torch saw (`env.devices`)."""
        return cast(Devices, self._env_part("devices"))

    def models(self) -> tuple[ModelFacts, ...]:
        """The outermost modules the script called (`env.models`; empty: it called none)."""
        return cast("tuple[ModelFacts, ...]", self._env_part("models"))

    def optimizers(self) -> tuple[OptimizerFacts, ...]:
        """The optimizers the script stepped (`env.optimizers`)."""
        return cast("tuple[OptimizerFacts, ...]", self._env_part("optimizers"))

    def env_vars(self) -> dict[str, str]:
        """The performance-relevant environment variables the script ran with (`env.env_vars`)."""
        return cast("dict[str, str]", self._env_part("env_vars"))

    def forward_state(self) -> ForwardState:
        """The switches in effect while the outermost module ran (`env.forward_state`)."""
        return cast(ForwardState, self._env_part("forward_state"))

    def script_tools(self) -> ScriptTools:
        """The script's own debugging tools in the timing window (`env.script_tools`)."""
        return cast(ScriptTools, self._env_part("script_tools"))

    def script_warnings(self) -> tuple[ScriptWarning, ...]:
        """The warnings the script's process showed (`env.warnings`; empty: none was shown)."""
        return cast("tuple[ScriptWarning, ...]", self._env_part("warnings"))

    def compile_used(self) -> bool:
        """Whether the script compiled something (`env.compile_used`)."""
        return bool(self._env_part("compile_used"))

    def step_elements(self) -> tuple[int, ...]:
        """The outermost model's input elements per step (`env.distributed_runtime.step_elements`)."""
        runtime: RuntimeFacts = self._env_part("distributed_runtime")
        return known(runtime.step_elements, "env.distributed_runtime.step_elements")

    def layer_shapes(self) -> list[LayerShape]:
        """Linear/Conv shapes of every observed outermost model (`env.models[].layer_shapes`)."""
        models = self.models()
        if not models or any(m.layer_shapes is None for m in models):
            raise MissingEvidence("env.models[].layer_shapes")
        return [shape for m in models for shape in m.layer_shapes or ()]

    def runs_on_cpu_only(self) -> bool:
        """Every observed model keeps all its parameters on the CPU."""
        models = self.models()
        return bool(models) and all(set(m.parameter_devices) <= {"cpu"} for m in models)

    def compile(self) -> CompileReport:
        """`record.compile` (docs/compile.md): only when the script compiled something."""
        return self._section("compile", CompileReport.from_dict)

    def compile_comparison(self) -> Comparison:
        """`record.compile.comparison`: the eager-vs-compiled comparison of `torchdoctor compile`."""
        comparison = self.compile().comparison
        if comparison is None:
            raise MissingEvidence("compile.comparison")
        return comparison

    def anomaly_detection(self) -> bool:
        """Anomaly mode was on at the timing window's start (`script_tools`, which also sees a
        `detect_anomaly()` context the stop unwinds) or when the run ended (`torch` switches)."""
        environment = self.environment()
        tools, switches = environment.script_tools, environment.torch
        at_start = tools.anomaly_detection if tools else None
        at_end = switches.anomaly_detection if switches else None
        if at_start is None and at_end is None:
            raise MissingEvidence("env.torch.anomaly_detection")
        return bool(at_start) or bool(at_end)

    def gradcheck_fraction(self) -> float:
        """Measured wall time of the script's gradcheck calls over the timing window (0 if none)."""
        return self._window_fraction(self.script_tools().gradcheck_s)

    def save_fraction(self) -> float:
        """Measured wall time of the script's torch.save calls over the timing window (0 if none)."""
        return self._window_fraction(self.script_tools().save_s)

    def _window_fraction(self, seconds: float | None) -> float:
        window_s = self.summary("window_s")
        return min(1.0, (seconds or 0.0) / window_s) if window_s > 0 else 0.0

    def dataloader(self) -> DataLoaderFacts:
        """The first DataLoader the script iterated (the training loader in most scripts)."""
        loaders = self._env_part("dataloaders")
        if not loaders:
            raise MissingEvidence("DataLoader facts")
        return cast(DataLoaderFacts, loaders[0])

    def physical_cores(self) -> int:
        """The physical cores the script could run on (its affinity, at most the physical cores)."""
        cpu: Cpu = self._env_part("cpu")
        return known(cpu.usable_cores, "env.cpu.physical_cores")

    def uses_gpu(self) -> bool:
        """A GPU was there and an observed model kept parameters on it."""
        devices = self.devices()
        on_gpu = bool(self.environment().model_devices() & {"cuda", "xpu"})
        return bool(devices.gpu_count) and on_gpu

    def worker_cpu_cores(self) -> float:
        """Cores the child processes (DataLoader workers) kept busy over the window: their CPU
        time over wall time (`system.summary.children_cpu_percent_mean` / 100)."""
        percent = self.system_summary().children_cpu_percent_mean
        return known(percent, "system.summary.children_cpu_percent_mean") / 100.0

    def other_processes_cores(self) -> tuple[float, int]:
        """(cores other processes kept busy over the window, the machine's logical cores they are
        of): the machine's CPU less the script's process tree (`SystemSummary.other_cores`)."""
        cpu: Cpu = self._env_part("cpu")
        logical = known(cpu.logical_cores, "env.cpu.logical_cores")
        others = self.system_summary().other_cores(logical)
        return known(others, "system.summary.machine_cpu_percent_mean"), logical

    def system_summary(self) -> SystemSummary:
        """`record.system.summary`: the sampled machine load over the timing window, read once;
        its figures not sampled are None (an empty summary without one)."""
        summary = self._section("system", SystemSection.from_dict).summary
        return summary if summary is not None else SystemSummary()

    # -- analyses -------------------------------------------------------------------------------
    def trace(self) -> TraceSummary:
        """`record.trace` (docs/trace.md), read once; MissingEvidence without a readable one."""
        return self._section("trace", TraceSummary.from_dict)

    def trace_ranks(self) -> tuple[RankSummary, ...]:
        if self.record.trace is None or not self.trace().ranks:
            raise MissingEvidence("trace analysis")
        return self.trace().ranks

    def trace_rank(self) -> RankSummary:
        """The first rank with profiler steps (rank 0 in most runs)."""
        return self.trace_ranks()[0]

    def profiled_rank(self) -> RankSummary:
        """`trace_rank()`, when its profiled steps look like the timed ones: a profiled step more
        than REPRESENTATIVE_RATIO times the median timed step was disturbed (the process was
        descheduled, a one-off stall), and its per-operator shares would mislead."""
        rank = self.trace_rank()
        timed_s, profiled_us = self.record.summary.step_s, rank.step_us_median
        if timed_s and profiled_us and profiled_us > REPRESENTATIVE_RATIO * timed_s * 1e6:
            raise MissingEvidence(f"a representative profiled step (it took {profiled_us / 1e3:.1f} ms, "
                                  f"the median timed step {timed_s * 1e3:.1f} ms)")
        return rank

    def device(self) -> DeviceFigures:
        """`trace.ranks[0].device`: the device (GPU) figures of a trace with device work."""
        rank = self.trace_rank()
        if rank.device is None or not rank.has_device:
            raise MissingEvidence("device (GPU) section of the trace")
        return rank.device

    def window(self) -> Window:
        """The trace's window (docs/trace.md, "The window"): the one definition of the step span that
        utilisation, idle attribution, DataLoader and communication shares come from. A Record
        analysed before the window existed gets one rebuilt from its older figures (HTA device
        span, per-step utilisation), with `kind: device_span`."""
        rank = self.trace_rank()
        if rank.window is not None:
            return rank.window
        rebuilt = legacy_window(rank, self._legacy_data_share(rank))
        if rebuilt is None:
            raise MissingEvidence("trace window (device figures)")
        return rebuilt

    def _legacy_data_share(self, rank: RankSummary) -> float:
        """Share of the step the host waited for its next batch, for a window without idle
        attribution: the trace's DataLoader share, else the timed steps'. Without it the GPU idle
        behind a DataLoader reads as host overhead (measured on an H200, docs/gpu.md: the demo's GPU
        idled 99% of a step that waited 95% for data, and torch.compile was proposed for it)."""
        if rank.shares.dataloader_fraction is not None:
            return rank.shares.dataloader_fraction
        try:
            return float(self.summary("data_wait_fraction"))
        except MissingEvidence:
            return 0.0

    def device_window(self) -> Window:
        """The window of a GPU trace whose device figures mean something (`state` ok); a capture,
        a window with no device work or with invisible graph kernels is TD-CONF-003's."""
        self.device()
        window = self.window()
        if window.state != "ok":
            raise MissingEvidence(f"meaningful GPU utilisation (the trace window is `{window.state}`)")
        return window

    def trace_facts(self) -> TraceFacts:
        """`trace.ranks[0].facts` (devices, memory peaks, parallel wrappers, Tensor Core use)."""
        facts = self.trace_rank().facts
        if facts is None:
            raise MissingEvidence("trace facts (a trace analysis from before they were recorded)")
        return facts

    def multi_rank(self) -> MultiRank:
        """`trace.multi_rank` of two or more compared ranks."""
        multi = self.trace().multi_rank
        if not multi.compared:
            raise MissingEvidence("two or more ranks in the trace")
        return multi

    def distributed(self, *path: str) -> Any:
        """The part at `path` of `record.distributed` (torchdoctor.distributed's per-rank analysis,
        docs/distributed.md, read once as a DistributedSection): `distributed("runtime", "grad_sync")`
        is its GradSync. MissingEvidence when a part on the path is absent or null."""
        if self.record.distributed is None:
            raise MissingEvidence("distributed." + ".".join(path))
        value: Any = self._section("distributed", DistributedSection.from_dict)
        for name in path:
            value = getattr(value, name) if isinstance(value, Keyed) and name in value.keys else None
        if value is None:
            raise MissingEvidence("distributed." + ".".join(path))
        return value

    def memory(self) -> MemoryBreakdown:
        """`record.memory.breakdown`: the memory window's step breakdown (docs/memory.md)."""
        breakdown = self._section("memory", MemoryReport.from_dict).breakdown
        if breakdown is None:
            raise MissingEvidence("memory.breakdown")
        return breakdown

    def memory_category(self, category: str) -> int:
        """Bytes of `category` (activations, optimizer_state, ...) at the step's peak."""
        categories = self.memory().categories_bytes
        if category not in categories:
            raise MissingEvidence(f"memory.breakdown.categories_bytes.{category}")
        return int(categories[category])

    def allocator(self) -> AllocatorFigures:
        """`record.memory.breakdown.allocator`: CUDA caching-allocator figures."""
        figures = self.memory().allocator
        if figures is None:
            raise MissingEvidence("memory.breakdown.allocator")
        return figures

    def device_memory_bytes(self) -> int:
        """The first GPU's memory (`env.devices.gpus[0].total_memory_bytes`)."""
        gpus = self.devices().gpus
        return known(gpus[0].total_memory_bytes or None if gpus else None, "env.devices.gpus[0].total_memory_bytes")

    def accounting(self) -> Accounting:
        """`record.accounting`: the speed-of-light accounting (torchdoctor.accounting)."""
        return self._section("accounting", Accounting.from_dict)

    def whole_run(self) -> WholeRun:
        """`record.whole_run`: the whole run's breakdown and trends (`torchdoctor watch`)."""
        return self._section("whole_run", WholeRun.from_dict)

    def trend(self, kind: str) -> tuple[Trend, float] | None:
        """The whole run's largest trend of `kind` and the run's wall time in seconds; None when the
        run shows none (MissingEvidence without a whole-run section or its wall time)."""
        run = self.whole_run()
        wall = known(run.wall_s if run.wall_s > 0 else None, "whole_run.wall_s")
        found = [t for t in run.trends if t.kind == kind]
        return (max(found, key=lambda t: t.upside_s or 0.0), wall) if found else None

    def script_calls(self) -> tuple[ScriptCallsValue, float]:
        """(the calls the script's own code made per profiled step, the profiled step in seconds):
        the operator-costs probe's `script_calls` (observe/probes/script_calls.py)."""
        probe = OP_COSTS.of(self.record) or {}
        calls, step_s = probe.get("script_calls"), probe.get("step_s")
        if not probe.get("complete") or calls is None or not step_s:
            raise MissingEvidence("probes.op_costs.script_calls")
        return calls, float(step_s)

    def profiled_ops(self) -> tuple[list[dict[str, Any]], float]:
        """(the operator groups of a profiled step, the profiled step in seconds): the operator-costs
        probe's `ops`, each with its name, dtype, shapes, count, self time and the script's `source`."""
        probe = OP_COSTS.of(self.record) or {}
        if not probe.get("complete") or not probe.get("step_s"):
            raise MissingEvidence("probes.op_costs")
        return list(probe.get("ops") or []), float(probe["step_s"])

    def lint(self) -> LintResult:
        """`record.lint`: torchdoctor.lint's result for the observed script."""
        return self._section("lint", LintResult.from_dict)

    def lint_hits(self, topic: str) -> list[str]:
        """`path:line:col CODE` of every lint violation backing `topic` (e.g. `data.num_workers`);
        none without a readable lint section."""
        try:
            violations = self.lint().violations
        except MissingEvidence:
            return []
        return [v.location for v in violations if v.rule_hint == topic]
