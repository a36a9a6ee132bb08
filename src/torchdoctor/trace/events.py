"""The columnar, in-memory form of one Kineto trace, and the event kinds it distinguishes.

One row per complete ('X') event, sorted by start time. Names are interned: `name_id` indexes
`names`. Times are microseconds (`ts_us`, `dur_us`), as in the Chrome trace format. Integer
columns use -1 for "absent" (`stream` on host events, `correlation` on CPU operators, ...).
Classifying names (kernel type, sync call, ...) is done once per distinct name, never per event.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np

# Event kinds (the `kind` column).
CPU_OP = 0  # `cpu_op` (legacy `Operator`)
ANNOTATION = 1  # `user_annotation` (record_function, ProfilerStep#N, DataLoader, optimizer)
PYTHON = 2  # `python_function` (dropped at load time unless asked for)
RUNTIME = 3  # `cuda_runtime`, `cuda_driver` (legacy `Runtime`): cudaLaunchKernel, hip*, cu*
KERNEL = 4  # `kernel` (legacy `Kernel`)
MEMCPY = 5  # `gpu_memcpy` (legacy `Memcpy`)
MEMSET = 6  # `gpu_memset` (legacy `Memset`)
GPU_ANNOTATION = 7  # `gpu_user_annotation`
SYNC = 8  # `cuda_sync` (stream / event / context synchronisation as seen by CUPTI)

KIND_BY_CATEGORY: dict[str, int] = {
    "cpu_op": CPU_OP, "operator": CPU_OP,
    "user_annotation": ANNOTATION,
    "python_function": PYTHON,
    "cuda_runtime": RUNTIME, "runtime": RUNTIME, "cuda_driver": RUNTIME,
    "kernel": KERNEL,
    "gpu_memcpy": MEMCPY, "memcpy": MEMCPY,
    "gpu_memset": MEMSET, "memset": MEMSET,
    "gpu_user_annotation": GPU_ANNOTATION,
    "cuda_sync": SYNC,
}  # fmt: skip

HOST_KINDS = (CPU_OP, ANNOTATION, PYTHON, RUNTIME)
DEVICE_KINDS = (KERNEL, MEMCPY, MEMSET)

_STEP_RE = re.compile(r"^ProfilerStep\s*#\s*(\d+)$")
STEP_NAME_RE = _STEP_RE
DATALOADER_RE = re.compile(r"DataLoader")
#: NCCL kernels across versions: ncclKernel_*, ncclDevKernel_*, ncclSymDevKernel_* (and RCCL).
COMM_KERNEL_RE = re.compile(r"^(nccl|rccl)\w*Kernel")
#: Host-side collective operators (TensorBoard's "Communication" row).
COMM_OP_RE = re.compile(r"^(nccl:|gloo:|c10d::|record_param_comms)")
#: Runtime calls that put work on a device queue (CUDA runtime and driver, HIP, CUDA graphs).
LAUNCH_RE = re.compile(
    r"^(cudaLaunchKernel|cudaLaunchKernelExC|cuLaunchKernel|cuLaunchKernelEx|cudaLaunchCooperativeKernel"
    r"|cudaGraphLaunch|cuGraphLaunch|hipLaunchKernel|hipExtLaunchKernel|hipModuleLaunchKernel"
    r"|hipExtModuleLaunchKernel|hipGraphLaunch|cudaMemcpyAsync|cudaMemsetAsync|hipMemcpyAsync"
    r"|hipMemsetAsync|cudaMemcpy|cudaMemset|hipMemcpy|hipMemset)(_v\d+|_ptsz)?$"
)
#: Host calls that block until the device catches up.
SYNC_CALL_RE = re.compile(
    r"^(cudaStreamSynchronize|cudaDeviceSynchronize|cudaEventSynchronize|cuStreamSynchronize"
    r"|cuCtxSynchronize|hipStreamSynchronize|hipDeviceSynchronize|hipEventSynchronize"
    r"|aten::item|aten::_local_scalar_dense)$"
)


def step_number(name: str) -> int | None:
    """The N of a `ProfilerStep#N` name, else None."""
    match = _STEP_RE.match(name)
    return int(match.group(1)) if match else None


@dataclass(frozen=True, eq=False)
class Trace:
    """One rank's trace, columnar. `warnings` says what was dropped or repaired at load time."""

    path: str
    names: tuple[str, ...]
    kind: np.ndarray  # int8, one of the kinds above
    name_id: np.ndarray  # int32 index into names
    ts_us: np.ndarray  # float64 start
    dur_us: np.ndarray  # float64 duration, >= 0
    pid: np.ndarray  # int64
    tid: np.ndarray  # int64
    stream: np.ndarray  # int64, device events only
    correlation: np.ndarray  # int64, runtime calls and device events
    external_id: np.ndarray  # int64
    bytes: np.ndarray  # int64, memcpy / memset
    rank: int = 0
    metadata: dict[str, Any] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()
    truncated: bool = False
    _name_masks: dict[str, np.ndarray] = field(default_factory=dict, repr=False)

    def __len__(self) -> int:
        return int(self.kind.shape[0])

    @property
    def end_us(self) -> np.ndarray:
        return self.ts_us + self.dur_us

    def name_mask(self, pattern: re.Pattern[str], rows: np.ndarray | None = None) -> np.ndarray:
        """Per-row bool (all rows, or `rows`): the name matches `pattern` (searched once per name)."""
        by_name = self._name_masks.get(pattern.pattern)
        if by_name is None:
            by_name = np.fromiter((bool(pattern.search(n)) for n in self.names), bool, len(self.names))
            self._name_masks[pattern.pattern] = by_name
        name_id = self.name_id if rows is None else self.name_id[rows]
        return by_name[name_id] if len(self.names) else np.zeros(name_id.size, bool)

    def has_device(self) -> bool:
        return bool(np.isin(self.kind, DEVICE_KINDS).any())
