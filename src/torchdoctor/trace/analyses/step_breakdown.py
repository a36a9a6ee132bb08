"""Step-time breakdown in the TensorBoard profiler plugin's order; the parts sum to the wall time.

Each instant of the step window goes to the first category active then, in this order:
Kernel (device kernels), Memcpy, Memset, Communication (host collective ops: `nccl:*`, `gloo:*`,
`c10d::*`, `record_param_comms`), Runtime (CUDA/HIP runtime and driver calls), DataLoader (host
events whose name contains `DataLoader`), CPU Exec (any other CPU operator or annotation), Other
(nothing recorded: Python or idle). Device events count in the host step window in which they ran.
"""

from __future__ import annotations

import numpy as np

from torchdoctor.trace.events import (
    ANNOTATION, COMM_OP_RE, CPU_OP, DATALOADER_RE, KERNEL, MEMCPY, MEMSET, RUNTIME, STEP_NAME_RE, Trace, is_kind,
)  # fmt: skip
from torchdoctor.trace.intervals import coverage_by_mask, merge
from torchdoctor.trace.steps import Step

CATEGORIES = ("kernel", "memcpy", "memset", "communication", "runtime", "dataloader", "cpu_exec")


def step_breakdown(trace: Trace, step: Step, rows: np.ndarray) -> dict[str, float]:
    """`rows`: every event overlapping the step window. Returns `<category>_us` for each + other."""
    kind = trace.kind[rows]
    not_step = ~trace.name_mask(STEP_NAME_RE, rows)
    host = is_kind(kind, (CPU_OP, ANNOTATION)) & not_step
    comm = host & trace.name_mask(COMM_OP_RE, rows)
    loader = host & ~comm & trace.name_mask(DATALOADER_RE, rows)
    masks = [kind == KERNEL, kind == MEMCPY, kind == MEMSET, comm, kind == RUNTIME, loader, host & ~comm & ~loader]
    sets = [merge(trace.ts_us[part], trace.end_us[part]) for part in (rows[m] for m in masks)]
    cover = coverage_by_mask(sets, step.start_us, step.end_us)
    lowest_bit = np.array([(m & -m).bit_length() - 1 for m in range(cover.size)])
    out = {f"{name}_us": float(cover[lowest_bit == i].sum()) for i, name in enumerate(CATEGORIES)}
    out["other_us"] = float(cover[0])
    return out
