"""Launch queue depth per stream (HTA `get_queue_length_time_series`).

The depth of a stream's queue rises by one when a runtime call launches a device event on it and
falls by one when that event starts executing. A queue near `TraceConfig.queue_saturation_depth`
(CUDA holds 1024 pending launches) means the host runs far ahead of the device and further
launches block: the run is device-bound. Reported for the stream with the deepest queue:
`max_depth`, `mean_depth` (time-weighted), `saturated_us` (time at or above the threshold) and
`saturated_fraction` (of the span from the stream's first launch to its last event start).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from torchdoctor.trace.config import TraceConfig
from torchdoctor.trace.device import DeviceEvents
from torchdoctor.trace.events import Trace


def queue_depth(trace: Trace, dev: DeviceEvents, config: TraceConfig) -> dict[str, Any]:
    ok = dev.launch >= 0
    rows, launch = dev.rows[ok], dev.launch[ok]
    best: dict[str, Any] = {}
    for stream in np.unique(trace.stream[rows]):
        mine = trace.stream[rows] == stream
        figures = _series(trace.ts_us[launch[mine]], trace.ts_us[rows[mine]], config.queue_saturation_depth)
        if not best or figures["max_depth"] > best["max_depth"]:
            best = {"stream": int(stream), **figures}
    return best


def _series(launch_us: np.ndarray, start_us: np.ndarray, threshold: int) -> dict[str, Any]:
    times = np.concatenate([launch_us, start_us])
    steps = np.concatenate([np.ones(launch_us.size), -np.ones(start_us.size)])
    order = np.argsort(times, kind="stable")
    times, depth = times[order], np.cumsum(steps[order])
    spans = np.diff(times)
    span = float(times[-1] - times[0]) if times.size else 0.0
    saturated = float(spans[depth[:-1] >= threshold].sum())
    return {
        "max_depth": int(depth.max()),
        "mean_depth": float((depth[:-1] * spans).sum() / span) if span else 0.0,
        "saturated_us": saturated,
        "saturated_fraction": saturated / span if span else 0.0,
    }
