"""Where the device's idle time goes (HTA `get_idle_time_breakdown`, plus synchronisation).

Per stream, each gap between consecutive device events (previous end to next start) is:
- `sync`: a host synchronising call (events.SYNC_CALL_RE) ended inside the gap and the next
  event was launched after the previous one ended: the host waited for the device, then the
  device waited for the host (this category is ours; HTA counts it as host wait);
- `host_wait`: otherwise, the next event's runtime launch started after the previous event ended
  (the host did not enqueue work fast enough);
- `kernel_wait`: otherwise, a gap shorter than `consecutive_kernel_delay_us` (30 us in HTA):
  launch overhead between back-to-back kernels;
- `other`: the rest.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from torchdoctor.trace.device import DeviceEvents
from torchdoctor.trace.events import SYNC_CALL_RE, Trace

CONSECUTIVE_KERNEL_DELAY_US = 30.0
CATEGORIES = ("host_wait", "kernel_wait", "sync", "other")


def idle_breakdown(trace: Trace, dev: DeviceEvents) -> dict[str, Any]:
    sync_rows = np.flatnonzero(trace.name_mask(SYNC_CALL_RE))
    sync_ends = np.sort(trace.ts_us[sync_rows] + trace.dur_us[sync_rows])
    totals = dict.fromkeys(CATEGORIES, 0.0)
    per_stream = []
    for stream in np.unique(trace.stream[dev.rows]):
        idle = _stream_idle(trace, dev, trace.stream[dev.rows] == stream, sync_ends)
        per_stream.append({"stream": int(stream), **{f"{k}_us": v for k, v in idle.items()}})
        for key, value in idle.items():
            totals[key] += value
    whole = sum(totals.values())
    return {
        **{f"{k}_us": v for k, v in totals.items()},
        **{f"{k}_fraction": (v / whole if whole else 0.0) for k, v in totals.items()},
        "streams": per_stream,
    }


def _stream_idle(trace: Trace, dev: DeviceEvents, mask: np.ndarray, sync_ends: np.ndarray) -> dict[str, float]:
    rows, launch = dev.rows[mask], dev.launch[mask]
    order = np.argsort(trace.ts_us[rows], kind="stable")
    rows, launch = rows[order], launch[order]
    start = trace.ts_us[rows]
    prev_end = (start + trace.dur_us[rows])[:-1]
    gap = start[1:] - prev_end
    launched = np.where(launch[1:] >= 0, trace.ts_us[np.clip(launch[1:], 0, None)], -np.inf)
    host_wait = launched > prev_end
    synced = np.searchsorted(sync_ends, start[1:]) > np.searchsorted(sync_ends, prev_end)
    sync = host_wait & synced
    kernel_wait = ~host_wait & (gap < CONSECUTIVE_KERNEL_DELAY_US)
    other = ~host_wait & ~kernel_wait
    return {
        "host_wait": float(gap[host_wait & ~sync].sum()),
        "kernel_wait": float(gap[kernel_wait].sum()),
        "sync": float(gap[sync].sum()),
        "other": float(gap[other].sum()),
    }
