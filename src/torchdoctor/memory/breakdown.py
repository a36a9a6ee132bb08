"""The memory breakdown of one step: a frozen value, JSON-ready (`to_dict`/`from_dict`).

Definitions (MemTracker's categories, `torch.distributed._tools.mem_tracker._MemRefType`):
- parameters, buffers: storages of the tracked modules' parameters and buffers;
- gradients: storages of `.grad` tensors;
- optimizer_state: tensors in `optimizer.state` and those created inside `optimizer.step()`;
- activations: tensors created during forward (outside backward), kept or not;
- temporaries: tensors created during backward;
- other: anything else tracked (inputs, tensors created outside forward/backward/step).
The peak is the largest sum of live tracked storages during the step, per device; `phase` is
where it happened: "forward", "backward" or "optimizer" (or "outside" the model's calls).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from torchdoctor.jsonfields import value_of

SCHEMA_VERSION = 1

#: Category names, in the order they are shown, mapped from MemTracker's `_MemRefType` values.
CATEGORIES = {
    "Parameter": "parameters",
    "Buffer": "buffers",
    "Gradient": "gradients",
    "Optstate": "optimizer_state",
    "Activation": "activations",
    "Temp": "temporaries",
    "Other": "other",
}


@dataclass(frozen=True, slots=True)
class ModuleMemory:
    """One top-level submodule of the model (a direct child of the root)."""

    name: str
    parameter_bytes: int
    output_bytes: int
    """Storages of its forward outputs (what it hands to the next module)."""
    activation_bytes: int | None = None
    """Growth of the tracked total over its forward: what it keeps for backward, output included."""
    peak_forward_bytes: int | None = None
    """Largest tracked total while its forward ran."""
    peak_backward_bytes: int | None = None
    """Largest tracked total while its backward ran."""


@dataclass(frozen=True, slots=True)
class AllocatorFigures:
    """The CUDA caching allocator's figures for the device (torch.cuda.memory_stats), at the step's
    end; a figure a saved Record lacks is None."""

    device: str | None = None
    allocated_bytes: int | None = None
    reserved_bytes: int | None = None
    peak_allocated_bytes: int | None = None
    peak_reserved_bytes: int | None = None
    fragmentation: float | None = None
    """Inactive split bytes over reserved bytes."""
    num_alloc_retries: int | None = None
    num_ooms: int | None = None


@dataclass(frozen=True, slots=True)
class MemoryBreakdown:
    """Where the memory of one step went; `method` says how it was measured."""

    method: str
    """"mem_tracker" (categories exact), "cuda_allocator" or "rss" (totals only; see `reason`)."""
    device: str
    peak_bytes: int | None
    categories_bytes: dict[str, int] = field(default_factory=dict)
    """Bytes per category at the moment of the peak (keys: CATEGORIES' values)."""
    phase: str | None = None
    modules: list[ModuleMemory] = field(default_factory=list)
    start_bytes: int | None = None
    """Tracked total when the step began (the state carried between steps)."""
    batch_size: int | None = None
    reason: str | None = None
    """Why the categories are missing or partial (fallback, OOM, step not finished)."""
    allocator: AllocatorFigures | None = None
    """CUDA allocator figures (see torchdoctor.observe.probes.cuda_memory), when a CUDA device was used."""

    @property
    def activations_bytes(self) -> int:
        return self.categories_bytes.get("activations", 0)

    @property
    def dynamic_bytes(self) -> int | None:
        """Peak minus what was live at the step's start: the step's own growth."""
        if self.peak_bytes is None or self.start_bytes is None:
            return None
        return self.peak_bytes - self.start_bytes

    def share(self, category: str) -> float | None:
        """Fraction of the peak taken by `category`."""
        if not self.peak_bytes:
            return None
        return self.categories_bytes.get(category, 0) / self.peak_bytes

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["schema_version"] = SCHEMA_VERSION
        return data

    @classmethod
    def from_dict(cls, data: Any, where: str = "memory.breakdown") -> MemoryBreakdown:
        """The breakdown of `to_dict`'s JSON; RecordFormatError naming a field of the wrong type, or
        a missing `method`, `device` or `peak_bytes`."""
        return value_of(cls, data, where)
