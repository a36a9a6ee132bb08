"""Environment fingerprint: versions, devices, CPU, threads, environment variables, torch switches.

Taken in the observed process at the end of the run, so the switches are as the script left them.
"""

from __future__ import annotations

import os
import platform
import re
import socket
import sys
from typing import Any

import psutil
import torch

from torchdoctor.capability import host_isa_flags, precision_isa_flags

#: Environment variables that change performance or debugging behaviour.
ENV_VARS = (
    "OMP_NUM_THREADS",
    "MKL_NUM_THREADS",
    "PYTORCH_CUDA_ALLOC_CONF",
    "PYTORCH_ALLOC_CONF",
    "CUDA_LAUNCH_BLOCKING",
    "CUDA_VISIBLE_DEVICES",
    "TORCH_LOGS",
    "TORCH_COMPILE_DEBUG",
    "TORCHDYNAMO_DISABLE",
    "TORCH_SHOW_CPP_STACKTRACES",
    "TORCH_DISTRIBUTED_DEBUG",
)
_ENV_PREFIXES = ("NCCL_",)


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            match = re.search(r"^model name\s*:\s*(.+)$", fh.read(), re.MULTILINE)
            if match:
                return match.group(1).strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def versions() -> dict[str, Any]:
    cudnn = torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None
    nccl = None
    if torch.cuda.is_available() and hasattr(torch.cuda, "nccl"):
        raw = torch.cuda.nccl.version()
        nccl = ".".join(map(str, raw)) if isinstance(raw, tuple) else str(raw)
    return {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "hip": getattr(torch.version, "hip", None),
        "cudnn": cudnn,
        "nccl": nccl,
        "platform": platform.platform(),
    }


def devices() -> dict[str, Any]:
    gpus = []
    if torch.cuda.is_available():
        for index in range(torch.cuda.device_count()):
            props = torch.cuda.get_device_properties(index)
            gpus.append(
                {
                    "index": index,
                    "name": props.name,
                    "capability": f"{props.major}.{props.minor}",
                    "total_memory_bytes": props.total_memory,
                    "multiprocessors": props.multi_processor_count,
                }
            )
    return {
        "cuda_available": torch.cuda.is_available(),
        "gpu_count": len(gpus),
        "gpus": gpus,
        "mps_available": bool(getattr(torch.backends, "mps", None) and torch.backends.mps.is_available()),
    }


def cpu() -> dict[str, Any]:
    return {
        "model": _cpu_model(),
        "physical_cores": psutil.cpu_count(logical=False),
        "logical_cores": psutil.cpu_count(logical=True),
        "affinity_cores": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "memory_bytes": psutil.virtual_memory().total,
        "hostname": socket.gethostname(),
        "isa_flags": precision_isa_flags(host_isa_flags()),
    }


def usable_cores() -> int:
    """The physical cores this process may run on (its CPU affinity, at most the physical cores), as
    `rules.evidence.Evidence.physical_cores` reads them from `cpu()`."""
    physical = psutil.cpu_count(logical=False) or os.cpu_count() or 1
    affinity = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else physical
    return min(affinity, physical)


def switches() -> dict[str, Any]:
    return {
        "num_threads": torch.get_num_threads(),
        "num_interop_threads": torch.get_num_interop_threads(),
        "grad_enabled": torch.is_grad_enabled(),
        "anomaly_detection": torch.is_anomaly_enabled(),
        "deterministic_algorithms": torch.are_deterministic_algorithms_enabled(),
        "float32_matmul_precision": torch.get_float32_matmul_precision(),
        "cudnn_enabled": torch.backends.cudnn.enabled,
        "mkldnn_enabled": torch.backends.mkldnn.enabled,
        "cudnn_benchmark": torch.backends.cudnn.benchmark,
        "cudnn_deterministic": torch.backends.cudnn.deterministic,
        "cuda_matmul_allow_tf32": torch.backends.cuda.matmul.allow_tf32,
        "cudnn_allow_tf32": torch.backends.cudnn.allow_tf32,
    }


def environment_variables() -> dict[str, str]:
    found = {name: os.environ[name] for name in ENV_VARS if name in os.environ}
    found.update({k: v for k, v in os.environ.items() if k.startswith(_ENV_PREFIXES)})
    return found


def distributed() -> dict[str, Any]:
    info: dict[str, Any] = {
        "rank": int(os.environ.get("RANK", 0)),
        "local_rank": int(os.environ.get("LOCAL_RANK", 0)),
        "world_size": int(os.environ.get("WORLD_SIZE", 1)),
        "initialized": False,
    }
    if torch.distributed.is_available() and torch.distributed.is_initialized():
        info.update(
            initialized=True,
            backend=str(torch.distributed.get_backend()),
            world_size=torch.distributed.get_world_size(),
            rank=torch.distributed.get_rank(),
        )
    return info


def fingerprint() -> dict[str, Any]:
    """Everything above, as one JSON-serialisable dict."""
    return {
        "versions": versions(),
        "devices": devices(),
        "cpu": cpu(),
        "torch": switches(),
        "env_vars": environment_variables(),
        "distributed": distributed(),
        "executable": sys.executable,
    }
