"""The columnar, in-memory form of one Kineto trace, and the event kinds it distinguishes.

One row per complete ('X') event, sorted by start time. Names are interned: `name_id` indexes
`names`. Times are microseconds (`ts_us`, `dur_us`), as in the Chrome trace format. Integer
columns use -1 for "absent" (`stream` on host events, `correlation` on CPU operators, ...).
Classifying names (kernel type, sync call, ...) is done once per distinct name, never per event.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cache, cached_property
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
    # Other back ends' runtime calls (Intel XPU, out-of-tree PrivateUse1, MTIA, Glow): their device
    # events, where Kineto writes them as `kernel`/`gpu_memcpy`, join them by correlation id.
    "xpu_runtime": RUNTIME, "xpu_driver": RUNTIME, "privateuse1_runtime": RUNTIME,
    "privateuse1_driver": RUNTIME, "mtia_runtime": RUNTIME, "glow_runtime": RUNTIME,
    "kernel": KERNEL,
    "gpu_memcpy": MEMCPY, "memcpy": MEMCPY,
    "gpu_memset": MEMSET, "memset": MEMSET,
    "gpu_user_annotation": GPU_ANNOTATION,
    "cuda_sync": SYNC,
}  # fmt: skip

#: Complete events of these categories are known and deliberately not analysed: the profiler's own
#: span (`Trace`), its overhead, CUPTI range-profiler ranges, flow and memory records. Any other
#: category is reported as not understood (trace/dialect.py), never dropped silently.
IGNORED_CATEGORIES = frozenset({"trace", "overhead", "cuda_profiler_range", "external_correlation", "cuda_event",
                                "cpu_instant_event", "memory", "python"})

HOST_KINDS = (CPU_OP, ANNOTATION, PYTHON, RUNTIME)
DEVICE_KINDS = (KERNEL, MEMCPY, MEMSET)

_STEP_RE = re.compile(r"^ProfilerStep\s*#\s*(\d+)$")
STEP_NAME_RE = _STEP_RE
#: DataLoader spans: `enumerate(DataLoader)#<iterator class>.__next__` (every torch since 1.8;
#: `_SingleProcessDataLoaderIter`, `_MultiProcessingDataLoaderIter`, torchdata's stateful
#: iterators), `enumerate(DataPipe)#<DataPipe class>`, and user annotations naming a DataLoader.
DATALOADER_RE = re.compile(r"DataLoader|^enumerate\(DataPipe\)#")
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
#: Host calls that block until the device catches up, for the idle attribution (trace/analyses/
#: window.py): the sync calls above plus synchronous copies (`cudaMemcpy`, a device-to-host copy's
#: usual call, `hipMemcpy`, `cuMemcpyDtoH`), which return only when the device has drained.
BLOCKING_CALL_RE = re.compile(rf"{SYNC_CALL_RE.pattern}|^(cudaMemcpy|hipMemcpy|cuMemcpyDtoH)(_v\d+)?$")
#: Stream capture into a CUDA/HIP graph: launches between Begin and End are recorded, not run.
CAPTURE_BEGIN_RE = re.compile(r"^(cuda|hip|cu)StreamBeginCapture(_v\d+|_ptsz)?$")
CAPTURE_END_RE = re.compile(r"^(cuda|hip|cu)StreamEndCapture(_v\d+|_ptsz)?$")
#: Graph replays: one runtime call runs every kernel of a captured graph.
GRAPH_LAUNCH_RE = re.compile(r"^(cudaGraphLaunch|cuGraphLaunch|hipGraphLaunch)(_v\d+|_ptsz)?$")


def is_kind(kind: np.ndarray, kinds: tuple[int, ...]) -> np.ndarray:
    """Per-row bool: the row's kind (int8, a `kind` column or part of one) is one of `kinds`.
    A look-up in a 256-entry table: np.isin cost 7 ms on a 360,000-row column and 0.27 ms on a
    step's 8,000 rows (numpy 2.4, called hundreds of times per trace), the table 0.8 and 0.04 ms."""
    return _kind_table(kinds).take(kind.view(np.uint8))


@cache
def _kind_table(kinds: tuple[int, ...]) -> np.ndarray:
    """True at each of `kinds` (as the uint8 view of the int8 column reads them), built once per tuple."""
    table = np.zeros(256, bool)
    table[np.array(kinds, np.int8).view(np.uint8)] = True
    return table


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
    dialect: dict[str, Any] = field(default_factory=dict)  # trace/dialect.py: which format wrote it
    memory: dict[str, dict[str, int]] = field(default_factory=dict)  # "<type>:<id>" -> peak bytes ([memory] events)
    _name_masks: dict[str, np.ndarray] = field(default_factory=dict, repr=False)

    def __len__(self) -> int:
        return int(self.kind.shape[0])

    @cached_property
    def end_us(self) -> np.ndarray:
        """Each event's end, computed once and read-only: the analyses ask for it hundreds of times
        (each step's window), and recomputing it over every row cost 1 s on a 1 GB trace."""
        end = self.ts_us + self.dur_us
        end.setflags(write=False)
        return end

    @cached_property
    def launches_by_correlation(self) -> tuple[np.ndarray, np.ndarray]:
        """The runtime calls that carry a correlation id, sorted by it: (ids, rows). Sorted once per
        trace: three analyses look their device events' launches up in it (steps.launch_rows), and
        the sort cost 60 ms per call on a 1 GB trace."""
        rows = np.flatnonzero((self.kind == RUNTIME) & (self.correlation >= 0))
        ids = self.correlation[rows]
        order = np.argsort(ids, kind="stable")
        return ids[order], rows[order]

    def name_table(self, pattern: re.Pattern[str]) -> np.ndarray:
        """Per-name bool (indexed by `name_id`): the name matches `pattern`; searched once per name and
        pattern. For callers that test several patterns on the same rows: one `name_id` look-up."""
        by_name = self._name_masks.get(pattern.pattern)
        if by_name is None:
            by_name = np.fromiter((bool(pattern.search(n)) for n in self.names), bool, len(self.names))
            self._name_masks[pattern.pattern] = by_name
        return by_name

    def name_mask(self, pattern: re.Pattern[str], rows: np.ndarray | None = None) -> np.ndarray:
        """Per-row bool (all rows, or the row indices `rows`): the name matches `pattern`."""
        by_name = self.name_table(pattern)
        if not by_name.any():  # a pattern no event has (most traces' collectives, captures, ...): no look-up
            return np.zeros(len(self) if rows is None else len(rows), bool)
        # `take`, not fancy indexing: the same rows, 2-3x faster
        return by_name.take(self.name_id if rows is None else self.name_id.take(rows))

    def rows_named(self, pattern: re.Pattern[str], kinds: tuple[int, ...]) -> np.ndarray:
        """Rows (ascending) of the events of `kinds` whose name matches `pattern`. Tests the names, not
        rows, first: a pattern that names no event (sync calls, captures, collectives on most traces)
        costs no pass over the rows, and one that does, one pass instead of a gather per column."""
        by_name = self.name_table(pattern)
        if not by_name.any():
            return np.zeros(0, np.int64)
        return np.flatnonzero(by_name.take(self.name_id) & is_kind(self.kind, kinds))

    def has_device(self) -> bool:
        return bool(is_kind(self.kind, DEVICE_KINDS).any())
