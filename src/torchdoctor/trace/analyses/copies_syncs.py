"""Pageable memory copies and synchronising calls in a window.

- `pageable_memcpy`: device copies whose name says `Pageable` (`Memcpy HtoD (Pageable -> Device)`,
  `Memcpy DtoH (Device -> Pageable)`): copies from or to unpinned host memory, which are
  synchronous and slow; count, bytes and time per direction.
- `sync_calls`: host calls that block on the device (events.SYNC_CALL_RE: cudaStreamSynchronize,
  cudaDeviceSynchronize, cudaEventSynchronize, hip*, `aten::item`, `aten::_local_scalar_dense`):
  count and time per name. `count` is the number of sync points: nested sync calls
  (`aten::item` > `aten::_local_scalar_dense` > `cudaStreamSynchronize`) count once.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from torchdoctor.trace.events import MEMCPY, SYNC_CALL_RE, Trace
from torchdoctor.trace.intervals import length, merge

_PAGEABLE_RE = re.compile(r"Pageable")


def pageable_copies(trace: Trace, rows: np.ndarray) -> dict[str, Any]:
    """`rows`: device events of the window."""
    hit = rows[(trace.kind[rows] == MEMCPY) & trace.name_mask(_PAGEABLE_RE, rows)]
    out: dict[str, Any] = {"count": int(hit.size), "bytes": int(np.clip(trace.bytes[hit], 0, None).sum()),
                           "dur_us": float(trace.dur_us[hit].sum())}  # fmt: skip
    for direction in ("HtoD", "DtoH"):
        out[f"{direction.lower()}_count"] = int(trace.name_mask(re.compile(direction), hit).sum())
    return out


def sync_calls(trace: Trace, rows: np.ndarray) -> dict[str, Any]:
    """`rows`: host events of the window."""
    hit = rows[trace.name_mask(SYNC_CALL_RE, rows)]
    by_name: dict[str, dict[str, float]] = {}
    for name_id, dur in zip(trace.name_id[hit].tolist(), trace.dur_us[hit].tolist()):
        entry = by_name.setdefault(trace.names[name_id], {"count": 0, "dur_us": 0.0})
        entry["count"] += 1
        entry["dur_us"] += dur
    points = merge(trace.ts_us[hit], trace.end_us[hit])
    return {"count": int(points[0].size), "dur_us": length(points), "by_name": by_name}
