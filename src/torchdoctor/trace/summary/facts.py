"""A rank's `facts` (trace/analyses/facts.py): what its trace states about the run, as frozen values."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from torchdoctor.jsonfields import json_of, value_of


@dataclass(frozen=True, slots=True)
class DeviceProperties:
    """One entry of the trace's `deviceProperties`, under the profiler's names; None: not stated."""

    id: int | None = None
    name: str | None = None
    computeMajor: int | None = None  # noqa: N815 (the profiler's key)
    computeMinor: int | None = None  # noqa: N815
    totalGlobalMem: int | None = None  # noqa: N815

    @property
    def compute_capability(self) -> tuple[int, int] | None:
        """(major, minor), None when the trace does not state the major version."""
        return None if self.computeMajor is None else (self.computeMajor, self.computeMinor or 0)


@dataclass(frozen=True, slots=True)
class MemoryPeak:
    """The peak bytes of one device's `[memory]` records, and the device's total when known."""

    peak_allocated_bytes: int = 0
    peak_reserved_bytes: int = 0
    total_bytes: int | None = None


@dataclass(frozen=True, slots=True)
class TensorCores:
    """Tensor Core use of the window's kernels (trace/analyses/facts.py's docstring)."""

    kernel_us: float = 0.0
    tensor_core_kernel_us: float = 0.0
    tensor_core_fraction: float = 0.0
    eligible_kernel_us: float = 0.0
    eligible_fraction: float = 0.0
    eligible_not_tensor_core_fraction: float = 0.0


@dataclass(frozen=True, slots=True)
class TraceFacts:
    """The devices, their memory peaks (by device, `cuda:0`), the parallel wrappers and
    communication libraries seen, and Tensor Core use."""

    device_properties: tuple[DeviceProperties, ...] = ()
    memory: dict[str, MemoryPeak] = field(default_factory=dict)
    devices_used: tuple[int, ...] = ()
    data_parallel_forward_count: int = 0
    ddp_forward_count: int = 0
    comm_libraries: tuple[str, ...] = ()
    tensor_cores: TensorCores | None = None

    def to_dict(self) -> dict[str, Any]:
        return json_of(self)

    @classmethod
    def from_dict(cls, data: Any, where: str = "trace.ranks[].facts") -> TraceFacts:
        """The facts of `to_dict`'s JSON; RecordFormatError naming a field of the wrong type."""
        return value_of(cls, data, where)
