"""Where the observed script ran, as `record.env` holds it: versions, devices, CPU, torch's switches
and the process's place among the ranks (observe/env.py writes them in the observed process).

Each value is `Keyed` (torchdoctor.jsonfields): `to_dict` writes back the keys read, and a key an
older Record lacks reads as None.
"""

from __future__ import annotations

from dataclasses import dataclass

from torchdoctor.jsonfields import Keyed


@dataclass(frozen=True, slots=True)
class Versions(Keyed):
    """Python, torch and the libraries under it; `cuda` on a CUDA build, `hip` (ROCm) on a ROCm one,
    None for the one the build lacks."""

    python: str | None = None
    torch: str | None = None
    cuda: str | None = None
    hip: str | None = None
    cudnn: int | None = None
    nccl: str | None = None
    platform: str | None = None


@dataclass(frozen=True, slots=True)
class Gpu(Keyed):
    """One GPU torch saw: `capability` is its compute capability as written ("8.0")."""

    index: int | None = None
    name: str | None = None
    capability: str | None = None
    total_memory_bytes: int | None = None
    multiprocessors: int | None = None

    @property
    def compute_capability(self) -> tuple[int, int] | None:
        """`capability` as (major, minor); None when it is absent or not `major.minor`."""
        major, _, minor = (self.capability or "").partition(".")
        return (int(major), int(minor)) if major.isdigit() and minor.isdigit() else None


@dataclass(frozen=True, slots=True)
class Devices(Keyed):
    """The accelerators torch saw in the observed process."""

    cuda_available: bool | None = None
    gpu_count: int | None = None
    gpus: tuple[Gpu, ...] = ()
    mps_available: bool | None = None


@dataclass(frozen=True, slots=True)
class Cpu(Keyed):
    """The machine's CPU and memory, the cores the process could run on (`affinity_cores`), and the
    ISA flags that say which precisions it computes natively (`isa_flags`: capability.device's
    PRECISION_ISA among /proc/cpuinfo's flags; None where they could not be read)."""

    model: str | None = None
    physical_cores: int | None = None
    logical_cores: int | None = None
    affinity_cores: int | None = None
    memory_bytes: int | None = None
    hostname: str | None = None
    isa_flags: tuple[str, ...] | None = None

    @property
    def usable_cores(self) -> int | None:
        """The physical cores the process could run on: its affinity, at most the physical cores
        (observe/env.py's `usable_cores`, from the recorded counts); None when neither is recorded."""
        cores = self.affinity_cores or self.physical_cores
        return min(cores, self.physical_cores or cores) if cores else None


@dataclass(frozen=True, slots=True)
class TorchSwitches(Keyed):
    """torch's global switches as the script left them at the end of the run."""

    num_threads: int | None = None
    num_interop_threads: int | None = None
    grad_enabled: bool | None = None
    anomaly_detection: bool | None = None
    deterministic_algorithms: bool | None = None
    float32_matmul_precision: str | None = None
    cudnn_enabled: bool | None = None
    mkldnn_enabled: bool | None = None
    cudnn_benchmark: bool | None = None
    cudnn_deterministic: bool | None = None
    cuda_matmul_allow_tf32: bool | None = None
    cudnn_allow_tf32: bool | None = None


@dataclass(frozen=True, slots=True)
class RankPlacement(Keyed):
    """The process's rank and world (from torch.distributed when initialised, else the launcher's
    environment variables)."""

    rank: int | None = None
    local_rank: int | None = None
    world_size: int | None = None
    initialized: bool | None = None
    backend: str | None = None
