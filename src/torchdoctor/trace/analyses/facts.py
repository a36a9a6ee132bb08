"""Facts a trace states about the run beside its timings: the devices, their memory peak, the
parallelism wrappers and communication libraries seen, and Tensor Core use.

- `device_properties`: the trace's `deviceProperties` (id, name, compute capability, memory);
- `memory`: per device (`cuda:0`), the peak allocated and reserved bytes of the `[memory]`
  records (`profile_memory=True`) and the device's total memory when known;
- `devices_used`: device ids (the `pid` of device events) that ran work;
- `data_parallel_forward_count`, `ddp_forward_count`: `DataParallel.forward` and
  `DistributedDataParallel.forward` spans (both wrappers record them);
- `comm_libraries`: `nccl` (host `nccl:*` collectives or NCCL kernels), `rccl`, `gloo` (`gloo:*`);
- `tensor_cores` (kernels over the window): `kernel_us`, `tensor_core_kernel_us` (kernels whose
  name says they run on Tensor Cores / Matrix Cores, TENSOR_CORE_KERNEL_RE, and not on the fp32 FMA
  path, NOT_TENSOR_CORE_KERNEL_RE), `eligible_kernel_us`
  (kernels launched by an operator that autocast would run on Tensor Cores, TC_ELIGIBLE_OP_RE,
  matched through the kernel's `External id`), and their `_fraction`s of `kernel_us`;
  `eligible_not_tensor_core_fraction`: eligible kernels that do not use Tensor Cores.

The two name lists start from the TensorBoard profiler plugin's (`torch_tb_profiler/profiler/
tensor_core.py`, itself from NVIDIA PyProf) and add what newer libraries name their kernels
(`tensorop`, `wgmma`, `tf32`/`bf16`/`f16` GEMMs, AMD `MFMA` and Tensile `_MI<m>x<n>x<k>`) and newer
operators (`aten::convolution_backward`, `aten::linear`, ...).
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from torchdoctor.trace.events import ANNOTATION, COMM_KERNEL_RE, CPU_OP, DEVICE_KINDS, KERNEL, Trace, is_kind

TENSOR_CORE_KERNEL_RE = re.compile(
    r"h884|s884|h1688|s1688|hmma|i8816|16816|dgrad_1x1_stride_2x2|first_layer_wgrad_kernel|conv1x1|conv2d_c1_k1"
    r"|direct_group|xmma|c1688|tensorop|wgmma|wmma|gmma|tf32|bf16|f16|fp16|_mi\d+x\d+x\d+|mfma",
    re.IGNORECASE,
)
#: ...unless the name says the fp32 FMA (SIMT) path: `sm80_xmma_gemm_f32f32_..._ffma_...`, `*_sgemm_*`.
NOT_TENSOR_CORE_KERNEL_RE = re.compile(r"ffma|simt|sgemm|scudnn", re.IGNORECASE)
TC_ELIGIBLE_OP_RE = re.compile(
    r"^(aten::(_?convolution(_backward)?|conv(_tbc|_transpose)?\d?d?|cudnn_convolution\w*|mm|bmm|addmm_?|addmv_?|addr"
    r"|addbmm|baddbmm|matmul|linear|mv|chain_matmul|linalg_multi_dot|prelu|_thnn_fused_(lstm|gru)_cell|lstm_cell"
    r"|gru_cell|rnn_(tanh|relu)_cell)|\w*(Convolution|ConvolutionTranspose|Mm|Bmm|Addmm|Addmv|Mv|Addbmm)Backward\d*)$"
)
_PROPERTY_KEYS = ("id", "name", "computeMajor", "computeMinor", "totalGlobalMem")


def facts_section(trace: Trace, lo_us: float, hi_us: float) -> dict[str, Any]:
    props = [{k: p.get(k) for k in _PROPERTY_KEYS} for p in _device_properties(trace)]
    totals = {int(p["id"]): p["totalGlobalMem"] for p in props if isinstance(p.get("id"), int)}
    memory = {}
    for key, peak in sorted(trace.memory.items()):
        kind, _, ident = key.partition(":")
        total = totals.get(int(ident)) if kind != "cpu" and ident.lstrip("-").isdigit() else None
        memory[key] = {**peak, "total_bytes": total}
    dev = np.flatnonzero(is_kind(trace.kind, DEVICE_KINDS))
    host = np.flatnonzero(is_kind(trace.kind, (CPU_OP, ANNOTATION)))
    host_calls = np.bincount(trace.name_id[host], minlength=len(trace.names))  # per name: no sort (np.unique)
    host_names = {trace.names[i] for i in np.flatnonzero(host_calls)}
    kernel_names = {trace.names[i] for i in np.flatnonzero(np.bincount(trace.name_id[dev], minlength=len(trace.names)))}
    libraries = {lib for lib, prefix in (("nccl", "nccl:"), ("gloo", "gloo:")) if any(n.startswith(prefix) for n in host_names)}
    libraries |= {("rccl" if n.startswith("rccl") else "nccl") for n in kernel_names if COMM_KERNEL_RE.match(n)}
    return {
        "device_properties": props,
        "memory": memory,
        "devices_used": sorted(int(p) for p in np.unique(trace.pid[dev])),
        "data_parallel_forward_count": _count(trace, host_calls, "DataParallel.forward"),
        "ddp_forward_count": _count(trace, host_calls, "DistributedDataParallel.forward"),
        "comm_libraries": sorted(libraries),
        "tensor_cores": tensor_cores(trace, lo_us, hi_us),
    }


def _device_properties(trace: Trace) -> list[dict[str, Any]]:
    props = trace.metadata.get("deviceProperties")
    return [p for p in props if isinstance(p, dict)] if isinstance(props, list) else []


def _count(trace: Trace, calls: np.ndarray, name: str) -> int:
    """`calls[i]`: the events named `trace.names[i]`."""
    try:
        return int(calls[trace.names.index(name)])
    except ValueError:
        return 0


def tensor_cores(trace: Trace, lo_us: float, hi_us: float) -> dict[str, Any]:
    """Tensor Core use of the kernels that run in the window [lo_us, hi_us] (module docstring)."""
    kernels = np.flatnonzero(trace.kind == KERNEL)
    kernels = kernels[(trace.end_us[kernels] > lo_us) & (trace.ts_us[kernels] < hi_us)]
    dur = trace.dur_us[kernels]
    on_tc = trace.name_mask(TENSOR_CORE_KERNEL_RE, kernels) & ~trace.name_mask(NOT_TENSOR_CORE_KERNEL_RE, kernels)
    ops = np.flatnonzero(trace.kind == CPU_OP)
    ext, op_rows = trace.external_id[ops], ops
    order = np.argsort(ext, kind="stable")
    ext, op_rows = ext[order], op_rows[order]
    eligible = np.zeros(kernels.size, bool)
    if ext.size and kernels.size:
        want = trace.external_id[kernels]
        pos = np.clip(np.searchsorted(ext, want), 0, ext.size - 1)
        found = (ext[pos] == want) & (want >= 0)
        eligible[found] = trace.name_mask(TC_ELIGIBLE_OP_RE, op_rows[pos[found]])
    total = float(dur.sum())

    def share(mask: np.ndarray) -> float:
        return float(dur[mask].sum()) / total if total else 0.0

    return {
        "kernel_us": total,
        "tensor_core_kernel_us": float(dur[on_tc].sum()),
        "tensor_core_fraction": share(on_tc),
        "eligible_kernel_us": float(dur[eligible].sum()),
        "eligible_fraction": share(eligible),
        "eligible_not_tensor_core_fraction": share(eligible & ~on_tc),
    }
