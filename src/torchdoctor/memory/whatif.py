"""What-if estimates of a step's peak memory, computed from measured breakdowns (no new run).

Models, each an approximation stated where it is used:
- batch size: activations and temporaries grow linearly with the batch, the rest (parameters,
  gradients, optimizer state, buffers) does not. Fitted from two measured batch sizes when
  given (`BatchScaling.fit`), else from one (`BatchScaling.from_one`: zero intercept).
- activation checkpointing of repeated blocks (modules named `<prefix>.<i>`, two or more): each
  block keeps only its output; during backward one block's activations are recomputed at a time.
- bf16 autocast: activations made by autocast ops halve; bf16 copies of the weights (half of the
  fp32 parameters) are cached during the step. Parameters, gradients and optimizer state stay.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import asdict, dataclass
from typing import Any

from torchdoctor.errors import TorchDoctorError
from torchdoctor.memory.breakdown import MemoryBreakdown, ModuleMemory

_UNITS = {"": 1, "b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
          "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40}  # fmt: skip
_SIZE = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*([a-zA-Z]*)\s*$")
_REPEATED = re.compile(r"^(.*)\.(\d+)$")


class MemoryInputError(TorchDoctorError):
    """A memory option or file torchdoctor cannot use (bad size, too few measurements)."""


def parse_bytes(text: str) -> int:
    """'16GiB', '512 MiB', '2e9'-free decimal sizes -> bytes. Units: B, kB..TB, KiB..TiB."""
    match = _SIZE.match(text)
    unit = match.group(2).lower() if match else ""
    if not match or unit not in _UNITS:
        raise MemoryInputError(f"cannot read the size {text!r}; write it like 16GiB, 512MiB or 8GB")
    return int(float(match.group(1)) * _UNITS[unit])


@dataclass(frozen=True, slots=True)
class BatchScaling:
    """peak_bytes(batch) = fixed_bytes + per_sample_bytes * batch."""

    fixed_bytes: float
    per_sample_bytes: float
    measured_batches: tuple[int, ...]

    @classmethod
    def from_one(cls, b: MemoryBreakdown) -> BatchScaling:
        if not b.batch_size or b.peak_bytes is None:
            raise MemoryInputError("the batch size of the measured step is unknown")
        dynamic = b.categories_bytes.get("activations", 0) + b.categories_bytes.get("temporaries", 0)
        return cls(b.peak_bytes - dynamic, dynamic / b.batch_size, (b.batch_size,))

    @classmethod
    def fit(cls, a: MemoryBreakdown, b: MemoryBreakdown) -> BatchScaling:
        """The line through two measured (batch size, peak) points."""
        if not a.batch_size or not b.batch_size or a.batch_size == b.batch_size:
            raise MemoryInputError("two measurements at two different, known batch sizes are needed")
        slope = (b.peak_bytes - a.peak_bytes) / (b.batch_size - a.batch_size)
        return cls(a.peak_bytes - slope * a.batch_size, slope, (a.batch_size, b.batch_size))

    def peak_at(self, batch_size: int) -> int:
        return int(self.fixed_bytes + self.per_sample_bytes * batch_size)

    def largest_batch(self, budget_bytes: int) -> int:
        """Largest batch whose estimated peak fits `budget_bytes` (0 if even the fixed part does not)."""
        if self.per_sample_bytes <= 0:
            raise MemoryInputError("the peak does not grow with the batch; no largest batch to estimate")
        return max(0, int((budget_bytes - self.fixed_bytes) // self.per_sample_bytes))


def repeated_blocks(modules: list[ModuleMemory]) -> dict[str, list[ModuleMemory]]:
    """Top-level modules named `<prefix>.<i>`, grouped by prefix, groups of two or more."""
    groups: dict[str, list[ModuleMemory]] = defaultdict(list)
    for module in modules:
        match = _REPEATED.match(module.name)
        if match and module.activation_bytes is not None:
            groups[match.group(1)].append(module)
    return {prefix: blocks for prefix, blocks in groups.items() if len(blocks) >= 2}


def checkpointing_peak(b: MemoryBreakdown) -> int | None:
    """Estimated peak with each repeated block checkpointed (None: no repeated blocks)."""
    blocks = [m for group in repeated_blocks(b.modules).values() for m in group]
    if not blocks or b.peak_bytes is None:
        return None
    freed = sum(max(0, m.activation_bytes - m.output_bytes) for m in blocks)
    recomputed = max(m.activation_bytes for m in blocks)
    return int(b.peak_bytes - freed + recomputed)


def autocast_peak(b: MemoryBreakdown) -> int | None:
    """Estimated peak under bf16 autocast (from a float32 measurement)."""
    if b.peak_bytes is None or not b.categories_bytes:
        return None
    cats = b.categories_bytes
    saved = (cats.get("activations", 0) + cats.get("temporaries", 0)) / 2
    return int(b.peak_bytes - saved + cats.get("parameters", 0) / 2)


@dataclass(frozen=True, slots=True)
class WhatIf:
    """The estimates the diagnosis rules read (bytes; None where the model does not apply)."""

    checkpointing_peak_bytes: int | None
    autocast_bf16_peak_bytes: int | None
    per_sample_bytes: float | None
    fixed_bytes: float | None
    budget_bytes: int | None
    largest_batch_in_budget: int | None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def what_if(b: MemoryBreakdown, *, budget_bytes: int | None = None,
            scaling: BatchScaling | None = None) -> WhatIf:
    """Every estimate for one measured step; `scaling` defaults to `BatchScaling.from_one`."""
    if scaling is None and b.batch_size and b.peak_bytes is not None:
        scaling = BatchScaling.from_one(b)
    largest = None
    if scaling is not None and budget_bytes is not None and scaling.per_sample_bytes > 0:
        largest = scaling.largest_batch(budget_bytes)
    return WhatIf(
        checkpointing_peak_bytes=checkpointing_peak(b),
        autocast_bf16_peak_bytes=autocast_peak(b),
        per_sample_bytes=scaling.per_sample_bytes if scaling else None,
        fixed_bytes=scaling.fixed_bytes if scaling else None,
        budget_bytes=budget_bytes,
        largest_batch_in_budget=largest,
    )
