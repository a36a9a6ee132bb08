"""The window's figures (trace/analyses/window.py, docs/trace.md "The window") as a frozen value.

Which keys the window has depends on its state: an empty window has only `kind`, `state` and
`span_us`; a Record analysed before a figure existed lacks it. `Window.keys` remembers the keys
read, in their order, so `to_dict` writes back exactly what was read, absent keys left out.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from torchdoctor.jsonfields import value_of

IDLE_CAUSES = ("data", "sync", "host", "device")


@dataclass(frozen=True, slots=True)
class Window:
    """The step span every utilisation, idle and share figure comes from; None: not measured."""

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
    keys: tuple[str, ...] = field(default=(), compare=False, repr=False)
    """The JSON keys this window has, in order (not itself a key)."""

    def to_dict(self) -> dict[str, Any]:
        """The JSON read by `from_dict`: its keys in their order, the absent ones left out."""
        return {key: getattr(self, key) for key in self.keys}

    @classmethod
    def from_dict(cls, data: Any, where: str = "trace.ranks[].window") -> Window:
        """The window of its JSON; RecordFormatError naming a field of the wrong type."""
        value = value_of(cls, {k: v for k, v in data.items() if k != "keys"} if isinstance(data, dict) else data, where)
        return dataclasses.replace(value, keys=tuple(k for k in data if k in _KEYS))

    @classmethod
    def of(cls, **figures: Any) -> Window:
        """A window built from its figures (keys in the order given)."""
        return cls(**figures, keys=tuple(figures))

    def figure(self, name: str) -> float:
        """The figure `name` as a number, 0.0 when not measured."""
        return float(getattr(self, name) or 0.0)


_KEYS = frozenset(f.name for f in dataclasses.fields(Window)) - {"keys"}
