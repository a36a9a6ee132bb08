"""Temporal breakdown of device time (HTA `get_temporal_breakdown`, `get_gpu_kernel_breakdown`).

Over a window, with merged intervals of the kept device events (see trace/device.py):
- `span_us`: HTA's `kernel_time`, end of the last device event minus start of the first;
- `busy_us`: union of all device events; `idle_us = span_us - busy_us`;
- `compute_us`: union of computation kernels; `non_compute_us = busy_us - compute_us`;
- `*_fraction`: of `span_us`, as HTA reports them (HTA rounds to 0.01 %);
- `exclusive_us`: time during which exactly that combination of kernel types ran (HTA's
  "COMPUTATION overlapping COMMUNICATION" rows), and `by_kind_us`: the union of each of
  computation, communication, memcpy by direction and memset, which may overlap each other.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from torchdoctor.trace.device import COMMUNICATION, COMPUTATION, KERNEL_TYPES, MEMORY, DeviceEvents
from torchdoctor.trace.events import MEMCPY, MEMSET, Trace
from torchdoctor.trace.intervals import Intervals, coverage_by_mask, length

_DIRECTIONS = ("HtoD", "DtoH", "DtoD", "HtoH", "PtoP")


def temporal_breakdown(trace: Trace, dev: DeviceEvents) -> dict[str, Any]:
    """HTA-compatible breakdown over the span of the kept device events."""
    if dev.rows.size == 0:
        return {}
    lo = float(trace.ts_us[dev.rows].min())
    hi = float((trace.ts_us[dev.rows] + trace.dur_us[dev.rows]).max())
    by_type = [dev.intervals(trace, dev.ktype == t) for t in (COMPUTATION, COMMUNICATION, MEMORY)]
    cover = coverage_by_mask(by_type, lo, hi)
    span, idle = hi - lo, float(cover[0])
    compute = length(by_type[COMPUTATION])
    busy = span - idle
    return {
        "span_us": span,
        "busy_us": busy,
        "idle_us": idle,
        "compute_us": compute,
        "non_compute_us": busy - compute,
        "idle_fraction": idle / span if span else 0.0,
        "compute_fraction": compute / span if span else 0.0,
        "non_compute_fraction": (busy - compute) / span if span else 0.0,
        "exclusive_us": _exclusive(cover),
        "by_kind_us": _by_kind(trace, dev, by_type),
    }


def _exclusive(cover: np.ndarray) -> dict[str, float]:
    out = {}
    for mask in range(1, cover.size):
        label = "+".join(KERNEL_TYPES[b] for b in range(len(KERNEL_TYPES)) if mask >> b & 1)
        if cover[mask] > 0:
            out[label] = float(cover[mask])
    return out


def _by_kind(trace: Trace, dev: DeviceEvents, by_type: list[Intervals]) -> dict[str, float]:
    """`by_type`: the merged events of each kernel type (merged once: 10 ms a type on a 1 GB trace)."""
    kind = trace.kind[dev.rows]
    out = {
        "computation": length(by_type[COMPUTATION]),
        "communication": length(by_type[COMMUNICATION]),
        "memset": length(dev.intervals(trace, kind == MEMSET)),
    }
    for direction in _DIRECTIONS:
        is_dir = (kind == MEMCPY) & trace.name_mask(re.compile(direction), dev.rows)
        out[f"memcpy_{direction.lower()}"] = length(dev.intervals(trace, is_dir))
    return out
