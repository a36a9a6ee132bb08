"""`record.memory`: what the memory window measured of one step, as a frozen value.

JSON contract (`MemoryReport.to_dict()`, written by torchdoctor.observe.probes.memory, documented
in docs/memory.md): keys are only added within a `schema_version`. A Record's section is read
back with `MemoryReport.from_dict`; a key it lacks reads as None.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from torchdoctor.jsonfields import value_of
from torchdoctor.memory.breakdown import SCHEMA_VERSION, MemoryBreakdown
from torchdoctor.memory.timeline import MemoryTimeline
from torchdoctor.memory.whatif import WhatIf


@dataclass(frozen=True, slots=True)
class MemoryReport:
    """The step's breakdown, the estimates drawn from it, and the snapshot taken with it."""

    schema_version: int = SCHEMA_VERSION
    breakdown: MemoryBreakdown | None = None
    what_if: WhatIf | None = None
    """None when the breakdown has no categories."""
    snapshot: str | None = None
    """Path of the CUDA memory-history snapshot, when one was written."""
    snapshot_note: str | None = None
    """Why no snapshot was written although one was asked for."""
    timeline: MemoryTimeline | None = None
    """MemTracker's timeline of the step, else the snapshot's."""
    snapshot_timeline: MemoryTimeline | None = None
    measured_step: str | None = None
    """How the measured step was detected, as `Record.step_detection` spells it: "optimizer",
    "backward", "marker" (a training step) or "forward" (a call of the outermost module)."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema_version": self.schema_version,
            "breakdown": _dict(self.breakdown),
            "what_if": _dict(self.what_if),
            "snapshot": self.snapshot,
            "snapshot_note": self.snapshot_note,
            "timeline": _dict(self.timeline),
            "snapshot_timeline": _dict(self.snapshot_timeline),
            # absent from Records written before it was measured: they read and write back unchanged
            **({"measured_step": self.measured_step} if self.measured_step is not None else {}),
        }

    @classmethod
    def from_dict(cls, data: Any) -> MemoryReport:
        """The report of `to_dict`'s JSON; RecordFormatError naming a field of the wrong type."""
        return value_of(cls, data, "memory")


def _dict(value: MemoryBreakdown | WhatIf | MemoryTimeline | None) -> dict[str, Any] | None:
    return None if value is None else value.to_dict()
