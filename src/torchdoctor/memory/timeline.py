"""Memory over one step: the tracked bytes per category at each point MemTracker marks, in order.

Definitions:
- a point is one of MemTracker's own snapshot moments (each module's pre/post forward and pre/post
  backward), the optimizer step's start and end, the step's start and end, and the moment of the
  step's peak (the peak falls between hooks, so it is noted when MemTracker's global peak grows);
- each point holds the tracked bytes per category (`CATEGORIES`' values) of one device, the one
  the breakdown reports; `t_s` is seconds since the step began (`time.perf_counter`);
- `series` keeps the categories that are non-zero somewhere, in `CATEGORIES` order, so the
  stacked chart shows parameters at the bottom and activations/temporaries on top.
Steps with more points than `max_points` are thinned evenly; the first, last and peak points stay.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from typing import Any

from torchdoctor.memory.breakdown import CATEGORIES

SCHEMA_VERSION = 1
MAX_POINTS = 1000

#: (seconds since start, label, {device: {MemTracker key: bytes}})
Point = tuple[float, str, dict[Any, dict[str, int]]]


@dataclass(frozen=True, slots=True)
class MemoryTimeline:
    """`record.memory["timeline"]`: equal-length lists, one entry per point."""

    source: str
    """"mem_tracker" (exact categories) or "cuda_snapshot" (categories guessed from stacks)."""
    device: str
    t_s: list[float] = field(default_factory=list)
    labels: list[str] = field(default_factory=list)
    """What each point is, e.g. "GPT.blocks.0 post-forward", "optimizer step start", "peak"."""
    series: dict[str, list[int]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["schema_version"] = SCHEMA_VERSION
        return data


def thin(indices: list[int], keep: set[int], max_points: int) -> list[int]:
    """At most about `max_points` of `indices`, evenly spaced, always including those in `keep`."""
    if len(indices) <= max_points:
        return indices
    stride = -(-len(indices) // max_points)
    return [i for n, i in enumerate(indices) if n % stride == 0 or i in keep or n == len(indices) - 1]


class TimelineRecorder:
    """Collects points during a step; `timeline(device)` orders them into a MemoryTimeline."""

    def __init__(self, max_points: int = MAX_POINTS) -> None:
        self.max_points = max_points
        self._t0 = time.perf_counter()
        self._points: list[Point] = []
        self._peaks: dict[Any, Point] = {}  # device -> the moment its peak last grew

    def mark(self, label: str, snapshot: dict[Any, dict[str, int]]) -> None:
        """A point now; `snapshot` is MemTracker's current snapshot (copied)."""
        self._points.append((time.perf_counter() - self._t0, label, {d: dict(s) for d, s in snapshot.items()}))

    def mark_peak(self, snapshot: dict[Any, dict[str, int]], devices: Any = None) -> None:
        """The peak of `devices` (default: every device in `snapshot`) grew: keep, per device,
        (only) the latest such moment. `snapshot` is MemTracker's peak snapshot (copied)."""
        point = (time.perf_counter() - self._t0, "peak", {d: dict(s) for d, s in snapshot.items()})
        for device in snapshot if devices is None else devices:
            self._peaks[device] = point

    def timeline(self, device: Any) -> MemoryTimeline:
        peak = self._peaks.get(device)
        points = sorted(self._points + ([peak] if peak else []), key=lambda p: p[0])
        peak_index = {n for n, p in enumerate(points) if p is peak}
        chosen = [points[n] for n in thin(list(range(len(points))), peak_index, self.max_points)]
        series = {name: [int(p[2].get(device, {}).get(key, 0)) for p in chosen] for key, name in CATEGORIES.items()}
        return MemoryTimeline(
            source="mem_tracker", device=str(device), t_s=[round(p[0], 6) for p in chosen],
            labels=[p[1] for p in chosen], series={k: v for k, v in series.items() if any(v)},
        )  # fmt: skip
