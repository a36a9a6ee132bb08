"""Kernel launch statistics (HTA `get_cuda_kernel_launch_stats`, extended to hip*, cu* and graphs).

A launch is a runtime call matching `events.LAUNCH_RE` (cudaLaunchKernel, cudaLaunchKernelExC,
cuLaunchKernel, cudaGraphLaunch, hip*, cudaMemcpyAsync, cudaMemsetAsync, ...) joined by
correlation id to the device event it queued. Per launch: `cpu_us` = the runtime call's duration,
`gpu_us` = the device event's duration, `launch_delay_us` = device start - runtime call end,
clipped at 0 (HTA's definition). A CUDA-graph launch queues many kernels with one correlation id:
each kernel counts once.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from torchdoctor.trace.config import TraceConfig
from torchdoctor.trace.device import DeviceEvents
from torchdoctor.trace.events import LAUNCH_RE, Trace


def launch_stats(trace: Trace, dev: DeviceEvents, config: TraceConfig, num_steps: int) -> dict[str, Any]:
    has_launch = dev.launch >= 0
    is_launch_call = trace.name_mask(LAUNCH_RE)
    ok = has_launch & is_launch_call[np.clip(dev.launch, 0, None)]
    rows, launch = dev.rows[ok], dev.launch[ok]
    if rows.size == 0:
        return {"launches_count": 0}
    cpu = trace.dur_us[launch]
    gpu = trace.dur_us[rows]
    delay = np.clip(trace.ts_us[rows] - (trace.ts_us[launch] + cpu), 0, None)
    return {
        "launches_count": int(rows.size),
        "launches_per_step": rows.size / max(num_steps, 1),
        "median_cpu_us": float(np.median(cpu)),
        "median_gpu_us": float(np.median(gpu)),
        "median_launch_delay_us": float(np.median(delay)),
        "p90_launch_delay_us": float(np.percentile(delay, 90)),
        "gpu_shorter_than_launch_count": int((gpu < cpu).sum()),
        "gpu_shorter_than_launch_fraction": float((gpu < cpu).mean()),
        "runtime_outliers_count": int((cpu > config.runtime_outlier_us).sum()),
        "launch_delay_outliers_count": int((delay > config.launch_delay_outlier_us).sum()),
    }
