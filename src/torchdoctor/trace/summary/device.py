"""A rank's `device` figures (trace/rank.py's `_device`, docs/trace.md) as frozen values.

Every part is `Keyed`: an empty analysis writes fewer keys (`temporal: {}`, `queue: {}`,
`kernels: {"kernels_count": 0, "top": []}`, `launches: {"launches_count": 0}`), and `to_dict` writes
back exactly the keys read. None: a figure the part lacks.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from torchdoctor.jsonfields import Keyed


@dataclass(frozen=True, slots=True)
class Temporal(Keyed):
    """HTA's temporal breakdown of the device span: busy, idle, compute and the kernel kinds' time."""

    span_us: float | None = None
    busy_us: float | None = None
    idle_us: float | None = None
    compute_us: float | None = None
    non_compute_us: float | None = None
    idle_fraction: float | None = None
    compute_fraction: float | None = None
    non_compute_fraction: float | None = None
    exclusive_us: dict[str, float] = field(default_factory=dict)
    by_kind_us: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class KernelRow(Keyed):
    """One kernel of the `top` list: its total time over the window and its share of all kernels'."""

    name: str
    type: str | None = None
    count: int = 0
    total_us: float = 0.0
    mean_us: float = 0.0
    share_fraction: float = 0.0


@dataclass(frozen=True, slots=True)
class Kernels(Keyed):
    """The window's kernels: how many, their total time, and the longest (`top`), longest first."""

    kernels_count: int = 0
    distinct_kernels_count: int | None = None
    total_us: float | None = None
    top: tuple[KernelRow, ...] = ()


@dataclass(frozen=True, slots=True)
class Launches(Keyed):
    """Kernel launches: their CPU and GPU time, the delay from launch to start, and outliers."""

    launches_count: int = 0
    launches_per_step: float | None = None
    median_cpu_us: float | None = None
    median_gpu_us: float | None = None
    median_launch_delay_us: float | None = None
    p90_launch_delay_us: float | None = None
    gpu_shorter_than_launch_count: int | None = None
    gpu_shorter_than_launch_fraction: float | None = None
    runtime_outliers_count: int | None = None
    launch_delay_outliers_count: int | None = None


@dataclass(frozen=True, slots=True)
class Overlap(Keyed):
    """Communication kernels' time and the part of it that overlaps computation."""

    comm_us: float = 0.0
    comm_comp_overlap_us: float = 0.0
    comm_comp_overlap_fraction: float | None = None
    """None without communication."""


@dataclass(frozen=True, slots=True)
class IdleStream(Keyed):
    """One stream's idle time by cause."""

    stream: int
    host_wait_us: float = 0.0
    kernel_wait_us: float = 0.0
    sync_us: float = 0.0
    other_us: float = 0.0


@dataclass(frozen=True, slots=True)
class Idle(Keyed):
    """HTA's idle time by cause over every stream, as time and as fractions of all idle time."""

    host_wait_us: float = 0.0
    kernel_wait_us: float = 0.0
    sync_us: float = 0.0
    other_us: float = 0.0
    host_wait_fraction: float = 0.0
    kernel_wait_fraction: float = 0.0
    sync_fraction: float = 0.0
    other_fraction: float = 0.0
    streams: tuple[IdleStream, ...] = ()


@dataclass(frozen=True, slots=True)
class Queue(Keyed):
    """The launch queue of the stream that queued deepest; no keys without launches."""

    stream: int | None = None
    max_depth: int | None = None
    mean_depth: float | None = None
    saturated_us: float | None = None
    saturated_fraction: float | None = None


@dataclass(frozen=True, slots=True)
class PageableCopies(Keyed):
    """Copies from or to pageable host memory: how many, their bytes and time, by direction."""

    count: int = 0
    bytes: int = 0
    dur_us: float = 0.0
    htod_count: int = 0
    dtoh_count: int = 0


@dataclass(frozen=True, slots=True)
class DeviceFigures(Keyed):
    """The device figures of one rank over the selected steps (HTA's window for `temporal` etc.);
    a part a Record lacks reads as empty."""

    WHERE: ClassVar[str] = "trace.ranks[].device"
    temporal: Temporal = field(default_factory=Temporal)
    kernels: Kernels = field(default_factory=Kernels)
    launches: Launches = field(default_factory=Launches)
    overlap: Overlap = field(default_factory=Overlap)
    idle: Idle = field(default_factory=Idle)
    queue: Queue = field(default_factory=Queue)
    pageable_memcpy: PageableCopies = field(default_factory=PageableCopies)
    compute_us: float = 0.0
    comm_us: float = 0.0
