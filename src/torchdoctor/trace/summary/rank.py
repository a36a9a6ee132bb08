"""A rank's section of the trace summary (trace/rank.py, docs/trace.md) and the whole summary
(trace/analysis.py's `TraceAnalysis.to_dict`) as frozen `Keyed` values, holding the window, facts
and device values; None: a figure or part the Record lacks."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from torchdoctor.trace.summary.device import DeviceFigures, PageableCopies
from torchdoctor.trace.summary.facts import TraceFacts
from torchdoctor.jsonfields import Keyed
from torchdoctor.trace.summary.window import Window


@dataclass(frozen=True, slots=True)
class OpFigures(Keyed):
    """One host operator of a `top_by_self_time` list: its calls and self time."""

    name: str
    count: int = 0
    self_us: float = 0.0
    mean_self_us: float = 0.0
    max_self_us: float | None = None


@dataclass(frozen=True, slots=True)
class Shares(Keyed):
    """The share of a step (or of all, weighted by wall time) inside each kind of annotation, and
    outside any (`python_overhead_fraction`)."""

    dataloader_fraction: float | None = None
    optimizer_fraction: float | None = None
    backward_fraction: float | None = None
    forward_fraction: float | None = None
    python_overhead_fraction: float | None = None


@dataclass(frozen=True, slots=True)
class HostFigures(Shares):
    """Host operators over a window: how many, their self time, the small ones, the top by self time;
    a step's also says whether its small operators storm, and has its annotation shares (the
    `Shares` figures, absent from the rank's)."""

    ops_count: int = 0
    self_total_us: float = 0.0
    small_ops_count: int = 0
    small_ops_self_us: float = 0.0
    top_by_self_time: tuple[OpFigures, ...] = ()
    small_op_storm: bool | None = None


@dataclass(frozen=True, slots=True)
class SyncCount(Keyed):
    """How many synchronising calls, and their time."""

    count: int = 0
    dur_us: float = 0.0


@dataclass(frozen=True, slots=True)
class SyncCalls(SyncCount):
    """A step's synchronising calls, in all and by call name."""

    by_name: dict[str, SyncCount] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Dialect(Keyed):
    """How the trace was written (trace/dialect.py, docs/trace.md): its root, category set and step
    markers, the DataLoader's spans (up to five names) and loading mode, and unknown categories."""

    root: str | None = None
    categories: str | None = None
    profiler_step: str | None = None
    dataloader_spans: tuple[str, ...] = ()
    dataloader_mode: str | None = None
    unknown_categories: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class StepFigures(Keyed):
    """One profiled step: its span, host figures, syncs, time by what ran, and device busy share."""

    step: int | None = None
    start_us: float | None = None
    wall_us: float = 0.0
    host: HostFigures = field(default_factory=HostFigures)
    sync_calls: SyncCalls = field(default_factory=SyncCalls)
    breakdown_us: dict[str, float] = field(default_factory=dict)
    gpu_busy_us: float | None = None
    gpu_utilisation_fraction: float | None = None
    pageable_memcpy: PageableCopies = field(default_factory=PageableCopies)


@dataclass(frozen=True, slots=True)
class RankSummary(Keyed):
    """One rank's trace: its steps (the first ones listed, the totals over all), host operators,
    shares, sync calls, time by what ran, and the typed window, facts and device figures (device
    None: a trace without device work)."""

    WHERE: ClassVar[str] = "trace.ranks[]"
    rank: int | None = None
    path: str | None = None
    events_count: int = 0
    truncated: bool = False
    caveats: tuple[str, ...] = ()
    steps_count: int = 0
    step_us_median: float | None = None
    host: HostFigures = field(default_factory=HostFigures)
    shares: Shares = field(default_factory=Shares)
    sync_calls_per_step: float = 0.0
    sync_calls: SyncCalls = field(default_factory=SyncCalls)  # over every step (absent before it existed)
    breakdown_us: dict[str, float] = field(default_factory=dict)
    steps: tuple[StepFigures, ...] = ()  # the first `steps_listed` (TraceConfig) steps
    steps_left_out: int = 0  # steps analysed but not in `steps`
    device: DeviceFigures | None = None
    window: Window | None = None
    facts: TraceFacts | None = None
    dialect: Dialect | None = None
    warnings: tuple[str, ...] = ()

    @property
    def has_device(self) -> bool:
        """The trace has device figures (a GPU trace with device work)."""
        return self.device is not None and bool(self.device.keys)

    @property
    def window_us(self) -> float:
        """The profiled steps' span as their median times their count (at least one); 0 without a median."""
        return (self.step_us_median or 0.0) * max(1, self.steps_count)
