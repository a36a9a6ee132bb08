"""Communication/computation overlap (HTA `get_comm_comp_overlap`).

`comm_comp_overlap_fraction` = time during which a communication and a computation kernel both
run, divided by the time any communication kernel runs (unions of intervals). None without
communication kernels.
"""

from __future__ import annotations

from typing import Any

from torchdoctor.trace.device import COMMUNICATION, COMPUTATION, DeviceEvents
from torchdoctor.trace.events import Trace
from torchdoctor.trace.intervals import coverage_by_mask


def comm_comp_overlap(trace: Trace, dev: DeviceEvents) -> dict[str, Any]:
    comm = dev.intervals(trace, dev.ktype == COMMUNICATION)
    if comm[0].size == 0:
        return {"comm_us": 0.0, "comm_comp_overlap_us": 0.0, "comm_comp_overlap_fraction": None}
    comp = dev.intervals(trace, dev.ktype == COMPUTATION)
    lo, hi = float(comm[0][0]), float(comm[1][-1])
    cover = coverage_by_mask([comm, comp], lo, hi)
    comm_us, both_us = float(cover[1] + cover[3]), float(cover[3])
    return {
        "comm_us": comm_us,
        "comm_comp_overlap_us": both_us,
        "comm_comp_overlap_fraction": both_us / comm_us if comm_us else None,
    }
