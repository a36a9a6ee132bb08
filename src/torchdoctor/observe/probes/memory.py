"""The memory window of an observation: one step of the user's own loop, measured in place.

The observation session calls `begin(root, optimizer)` on a step boundary (after the timing and
profiler windows) and `end(batch_size)` on the next one, so the step measured is the script's
own, with its own data. When MemTracker cannot be used (see `mem_tracker_support`) or fails to
start, the window falls back to allocator totals (CUDA peak allocated) or, on CPU, the process's
resident set size at the step's end, and says why. A step that never ends (the script stopped,
or ran out of memory) is closed by `close(reason)` with the figures tracked until then.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import torch

from torchdoctor.observe.probes import cuda_memory as cuda
from torchdoctor.memory.breakdown import AllocatorFigures, MemoryBreakdown
from torchdoctor.memory.report import MemoryReport
from torchdoctor.memory.timeline import MemoryTimeline
from torchdoctor.observe.probes.memory_tracker import StepMemoryTracker
from torchdoctor.memory.whatif import what_if


class MemoryWindow:
    def __init__(self, *, snapshot_path: str = "", budget_bytes: int | None = None) -> None:
        self.snapshot_path = snapshot_path
        self.budget_bytes = budget_bytes
        self.tracker = StepMemoryTracker()
        self.breakdown: MemoryBreakdown | None = None
        self.snapshot_note: str | None = None
        self._state = "waiting"  # -> "tracking" | "fallback" -> "done"
        self._reason: str | None = None
        self.step: str | None = None  # the step detection of the measured step (StepClock.source)

    @property
    def measuring(self) -> bool:
        return self._state in ("tracking", "fallback")

    def begin(self, root: torch.nn.Module | None, optimizer: torch.optim.Optimizer | None, *,
              step: str | None = None) -> bool:
        """Start measuring the next step, one of `step`'s (how steps are detected: StepClock.source);
        False once a step was measured."""
        if self._state != "waiting":
            return False
        self.step = step
        self._maybe_start_history()
        cuda.reset_peak()
        try:
            started = self.tracker.start(root, optimizer)
        except (RuntimeError, TypeError, NotImplementedError) as exc:
            self.tracker.reason = f"MemTracker failed to start: {exc}"
            started = False
        self._reason = self.tracker.reason
        self._state = "tracking" if started else "fallback"
        return True

    def end(self, batch_size: int | None, reason: str | None = None) -> None:
        """The measured step ended (or, with `reason`, stopped early)."""
        if not self.measuring:
            return
        if self._state == "tracking":
            breakdown = self.tracker.stop(reason)
        else:
            breakdown = _fallback(self._reason if reason is None else f"{self._reason}; {reason}")
        figures = cuda.allocator_figures()
        self.breakdown = replace(breakdown, batch_size=batch_size,
                                 allocator=AllocatorFigures(**figures) if figures is not None else None)
        self._maybe_dump_history()
        self._state = "done"

    def close(self, reason: str) -> None:
        """Called when the observation ends: closes a step still being measured."""
        self.end(None, reason)

    def _maybe_start_history(self) -> None:
        if not self.snapshot_path:
            return
        self.snapshot_note = cuda.history_support()
        if self.snapshot_note is None:
            cuda.start_history()

    def _maybe_dump_history(self) -> None:
        if self.snapshot_path and self.snapshot_note is None:
            cuda.stop_history(Path(self.snapshot_path))

    def to_dict(self) -> dict[str, Any] | None:
        """`record.memory`: breakdown, what-if estimates, snapshot path; None if never begun."""
        if self.breakdown is None:
            return None
        b = self.breakdown
        snapshot = self.snapshot_path if self.snapshot_path and self.snapshot_note is None else None
        snapshot_timeline = _snapshot_timeline(snapshot) if snapshot else None
        return MemoryReport(
            breakdown=b,
            what_if=what_if(b, budget_bytes=self.budget_bytes) if b.categories_bytes else None,
            snapshot=snapshot,
            snapshot_note=self.snapshot_note if self.snapshot_path else None,
            timeline=self.tracker.timeline if self.tracker.timeline is not None else snapshot_timeline,
            snapshot_timeline=snapshot_timeline,
            measured_step=self.step,
        ).to_dict()


def _snapshot_timeline(path: str) -> MemoryTimeline | None:
    """The snapshot's timeline, or None when the written file cannot be replayed."""
    from torchdoctor.memory.snapshot import SnapshotFormatError, snapshot_timeline

    try:
        return snapshot_timeline(path)
    except (SnapshotFormatError, StopIteration):
        return None


def _fallback(reason: str | None) -> MemoryBreakdown:
    """Totals without categories: CUDA peak allocated, else this process's RSS now."""
    figures = cuda.allocator_figures()
    if figures is not None:
        return MemoryBreakdown("cuda_allocator", figures["device"], figures["peak_allocated_bytes"],
                               reason=reason)  # fmt: skip
    import psutil

    return MemoryBreakdown("rss", "cpu", psutil.Process().memory_info().rss, reason=reason)
