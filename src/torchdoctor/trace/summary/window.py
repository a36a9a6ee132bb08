"""The window's figures (trace/analyses/window.py, docs/trace.md "The window") as a frozen value.

Which keys the window has depends on its state: an empty window has only `kind`, `state` and
`span_us`; a Record analysed before a figure existed lacks it. As a `Keyed` value, `to_dict` writes
back exactly the keys read.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from torchdoctor.jsonfields import Keyed

IDLE_CAUSES = ("data", "sync", "host", "device")


@dataclass(frozen=True, slots=True)
class Window(Keyed):
    """The step span every utilisation, idle and share figure comes from; None: not measured."""

    WHERE: ClassVar[str] = "trace.ranks[].window"

    state: str
    """`ok`, or why utilisation means nothing here (`cpu_only`, `capture`, `no_device_work`, ...)."""
    kind: str | None = None
    """`steps`, `whole_trace`, `empty`, or `device_span` for one rebuilt from older figures."""
    start_us: float | None = None
    end_us: float | None = None
    span_us: float | None = None
    steps_count: int | None = None
    step_us_median: float | None = None
    dataloader_fraction: float | None = None
    kernel_utilisation_fraction: float | None = None
    kernel_utilisation_by_device: dict[str, float] = field(default_factory=dict)
    busy_us: float | None = None
    busy_fraction: float | None = None
    idle_us: float | None = None
    idle_fraction: float | None = None
    idle_data_us: float | None = None
    idle_sync_us: float | None = None
    idle_host_us: float | None = None
    idle_device_us: float | None = None
    idle_data_fraction: float | None = None
    idle_sync_fraction: float | None = None
    idle_host_fraction: float | None = None
    idle_device_fraction: float | None = None
    communication_fraction: float | None = None
    communication_exposed_fraction: float | None = None

    def figure(self, name: str) -> float:
        """The figure `name` as a number, 0.0 when not measured."""
        return float(getattr(self, name) or 0.0)

