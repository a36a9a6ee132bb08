"""Pageable memory copies and synchronising calls, per step (and pageable copies of any set of device events).

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
from torchdoctor.trace.intervals import run_merge_starts, run_sums
from torchdoctor.trace.steps import Step, bounds

_PAGEABLE_RE = re.compile(r"Pageable")


def pageable_copies(trace: Trace, rows: np.ndarray) -> dict[str, Any]:
    """`rows`: device events of the window."""
    hit = rows[(trace.kind[rows] == MEMCPY) & trace.name_mask(_PAGEABLE_RE, rows)]
    out: dict[str, Any] = {"count": int(hit.size), "bytes": int(np.clip(trace.bytes[hit], 0, None).sum()),
                           "dur_us": float(trace.dur_us[hit].sum())}  # fmt: skip
    for direction in ("HtoD", "DtoH"):
        out[f"{direction.lower()}_count"] = int(trace.name_mask(re.compile(direction), hit).sum())
    return out


def pageable_copies_by_step(trace: Trace, steps: list[Step]) -> list[dict[str, Any]]:
    """`pageable_copies` of each step's device events (those overlapping its window): the trace's
    pageable copies are found once, and few steps have any."""
    copies = trace.rows_named(_PAGEABLE_RE, (MEMCPY,))
    ts, end = trace.ts_us[copies], trace.end_us[copies]
    none = pageable_copies(trace, copies[:0])
    out = []
    for step in steps:
        mine = copies[(ts < step.end_us) & (end > step.start_us)]
        out.append(pageable_copies(trace, mine) if mine.size else dict(none))
    return out


def sync_calls(trace: Trace, steps: list[Step], rows: np.ndarray, owner: np.ndarray) -> list[dict[str, Any]]:
    """Each step's sync calls. `steps`: a batch of steps.batches; `rows`: the host events
    starting in each step (steps.starting_in), `owner` the step of each."""
    hi = bounds(steps)[1]
    hit = trace.name_mask(SYNC_CALL_RE, rows)
    rows, run = rows[hit], owner[hit]
    out: list[dict[str, Any]] = [{"count": 0, "dur_us": 0.0, "by_name": {}} for _ in steps]
    for step, name_id, dur in zip(run.tolist(), trace.name_id[rows].tolist(), trace.dur_us[rows].tolist()):
        entry = out[step]["by_name"].setdefault(trace.names[name_id], {"count": 0, "dur_us": 0.0})
        entry["count"] += 1
        entry["dur_us"] += dur
    ts, end = trace.ts_us[rows], trace.end_us[rows]
    first = run_merge_starts(ts, np.minimum(end, hi[run]), run)  # sync points: nested calls merged
    span = (np.maximum.reduceat(end, first) if first.size else end) - ts[first]
    counts = np.bincount(run[first], minlength=len(steps)).tolist()
    for entry, count, dur_us in zip(out, counts, run_sums(span, run[first], len(steps))):
        entry["count"], entry["dur_us"] = count, dur_us
    return out
