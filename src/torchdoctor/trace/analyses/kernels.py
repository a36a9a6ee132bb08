"""Kernel breakdown by name: count, total and mean time, share of all device-event time.

`share_fraction` is the kernel's summed duration over the summed duration of every kept device
event (kernels, memcpy, memset), so shares add up to 1; `type` is HTA's kernel type.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from torchdoctor.trace.device import KERNEL_TYPES, DeviceEvents, kernel_types
from torchdoctor.trace.events import Trace


def kernel_breakdown(trace: Trace, dev: DeviceEvents, top_n: int) -> dict[str, Any]:
    if dev.rows.size == 0:
        return {"kernels_count": 0, "top": []}
    names = trace.name_id[dev.rows]
    total = np.bincount(names, weights=trace.dur_us[dev.rows], minlength=len(trace.names))
    count = np.bincount(names, minlength=len(trace.names))
    grand = float(total.sum())
    types = kernel_types(trace.names)
    present = np.flatnonzero(count > 0)
    top = present[np.argsort(-total[present], kind="stable")[:top_n]]
    return {
        "kernels_count": int(dev.rows.size),
        "distinct_kernels_count": int((count > 0).sum()),
        "total_us": grand,
        "top": [
            {
                "name": trace.names[i],
                "type": KERNEL_TYPES[types[i]],
                "count": int(count[i]),
                "total_us": float(total[i]),
                "mean_us": float(total[i] / count[i]),
                "share_fraction": float(total[i] / grand) if grand else 0.0,
            }
            for i in top
        ],
    }
