"""The device-side view of a trace: which GPU events count, their type, and their launch.

Definitions follow HolisticTraceAnalysis (hta/utils/utils.py, hta/common/trace.py):
- a device event is a kernel, memcpy or memset with a correlation id (HTA: `stream >= 0 and
  correlation >= 0`);
- with two or more profiler steps, HTA drops the last step: only device events whose launching
  runtime call starts before the last step's start are kept (`hta_window=True`);
- kernel type: communication if the name matches `^nccl.*Kernel` (this also covers
  `ncclDevKernel_*`, `ncclSymDevKernel_*`, and `rccl*`), memory for `Memcpy*`/`Memset*`/`dma*`,
  otherwise computation.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from torchdoctor.trace.events import COMM_KERNEL_RE, DEVICE_KINDS, Trace, is_kind
from torchdoctor.trace.intervals import Intervals, merge
from torchdoctor.trace.steps import Step, launch_rows

COMPUTATION, COMMUNICATION, MEMORY = 0, 1, 2
KERNEL_TYPES = ("computation", "communication", "memory")
_MEMORY_RE = re.compile(r"^(Memcpy|Memset|dma)")
_NON_COMPUTE_RE = re.compile(r"^(nccl|rccl)\w*Kernel|Memcpy|Memset|Sync")


@dataclass(frozen=True)
class DeviceEvents:
    """Rows of the kept device events, their type, and their launching runtime call (-1: none)."""

    rows: np.ndarray
    ktype: np.ndarray  # COMPUTATION / COMMUNICATION / MEMORY
    launch: np.ndarray

    def intervals(self, trace: Trace, mask: np.ndarray | None = None) -> Intervals:
        rows = self.rows if mask is None else self.rows[mask]
        return merge(trace.ts_us[rows], trace.end_us[rows])


def kernel_types(names: tuple[str, ...]) -> np.ndarray:
    """Kernel type of each distinct name (HTA's get_kernel_type, with modern NCCL names)."""
    out = np.full(len(names), COMPUTATION, np.int8)
    for i, name in enumerate(names):
        if COMM_KERNEL_RE.match(name):
            out[i] = COMMUNICATION
        elif _MEMORY_RE.match(name) or _NON_COMPUTE_RE.search(name):
            out[i] = MEMORY
    return out


def device_events(trace: Trace, steps: list[Step], *, hta_window: bool = True) -> DeviceEvents:
    """The device events analysed; with `hta_window`, HTA's drop-the-last-step rule applies."""
    rows = np.flatnonzero(is_kind(trace.kind, DEVICE_KINDS) & (trace.correlation >= 0))
    launch = launch_rows(trace, rows)
    if hta_window and len(steps) >= 2:
        last_start = max(s.start_us for s in steps)
        keep = (launch >= 0) & (trace.ts_us[np.clip(launch, 0, None)] < last_start)
        rows, launch = rows[keep], launch[keep]
    ktype = kernel_types(trace.names)[trace.name_id[rows]] if rows.size else np.zeros(0, np.int8)
    return DeviceEvents(rows, ktype, launch)
