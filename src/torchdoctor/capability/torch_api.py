"""The torch version each API that advice names needs, and what a Record or a trace says about the
torch that recorded it.

A run's Record states torch's version exactly (`env.versions.torch`); a trace does not, but its
dialect bounds it (trace/dialect.py, docs/trace.md "Dialects"): the legacy categories were written
by torch 1.9 or earlier, a `cpu_op` ProfilerStep by 1.10 to 1.12, a `user_annotation` one by 1.13
or later. Where the bound does not decide, `supports` says None and the advice names the version
it needs instead of assuming it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

Version = tuple[int, int]

#: API -> (the torch version that first has it, how the advice names it).
API: dict[str, tuple[Version, str]] = {
    # torch.compile: PyTorch 2.0 release notes ("torch.compile is the main API for PyTorch 2.0").
    "compile": ((2, 0), "torch.compile"),
    # torch.autocast(device_type, ...), CPU bf16 autocast included: PyTorch 1.10 release notes
    # ("torch.autocast ... CPU autocasting with bfloat16").
    "autocast": ((1, 10), "torch.autocast"),
    # torch.cuda.amp.autocast / GradScaler: PyTorch 1.6 release notes (native AMP).
    "cuda_amp": ((1, 6), "torch.cuda.amp"),
    # torch.amp.GradScaler("cuda"): added in 2.3, when torch.cuda.amp.GradScaler was deprecated
    # (docs "Automatic Mixed Precision package - torch.amp", Gradient Scaling).
    "amp_grad_scaler": ((2, 3), "torch.amp.GradScaler"),
    # torch.set_float32_matmul_precision: PyTorch 1.12 release notes (TF32 off by default for
    # matmuls, the switch that turns it back on).
    "float32_matmul_precision": ((1, 12), "torch.set_float32_matmul_precision"),
    # FullyShardedDataParallel (FSDP1): PyTorch 1.11 release notes (beta).
    "fsdp": ((1, 11), "torch.distributed.fsdp.FullyShardedDataParallel"),
    # torch.distributed.fsdp.fully_shard (FSDP2) at its public path: docs page created Dec 2024,
    # torch 2.6 (2.4 and 2.5 had it under torch.distributed._composable.fsdp).
    "fully_shard": ((2, 6), "torch.distributed.fsdp.fully_shard"),
    # torch.distributed.checkpoint.async_save: the DCP async recipe's prerequisite is torch 2.4
    # ("Asynchronous Saving with Distributed Checkpoint (DCP)"; a prototype in 2.3).
    "async_save": ((2, 4), "torch.distributed.checkpoint.async_save"),
}


@dataclass(frozen=True, slots=True)
class TorchVersion:
    """The torch that recorded a run: at least `low`, at most `high` (None: no bound), and how the
    advice names it ("1.9", "1.9 or earlier", "1.13 or later", "not known")."""

    low: Version | None = None
    high: Version | None = None

    @property
    def text(self) -> str:
        if self.low and self.high:
            return _dotted(self.low) if self.low == self.high else f"{_dotted(self.low)} to {_dotted(self.high)}"
        if self.high:
            return f"{_dotted(self.high)} or earlier"
        if self.low:
            return f"{_dotted(self.low)} or later"
        return "not known"

    @classmethod
    def exact(cls, version: str | None) -> TorchVersion:
        """From a version string ("2.5.1+cu121"); unbounded where it does not parse."""
        parsed = parse_version(version)
        return cls(parsed, parsed)

    @classmethod
    def of_dialect(cls, categories: str | None, profiler_step: str | None) -> TorchVersion:
        """The bound a trace's dialect sets (module docstring); unbounded where it says nothing."""
        if categories == "legacy":
            return cls(None, (1, 9))
        if categories == "current" and profiler_step == "operator":
            return cls((1, 10), (1, 12))
        if categories == "current":
            return cls((1, 10), None) if profiler_step != "annotation" else cls((1, 13), None)
        return cls()


def parse_version(version: str | None) -> Version | None:
    """(major, minor) of "2.5.1+cu121" or "1.9.0a0"; None where it does not start so."""
    match = re.match(r"\s*(\d+)\.(\d+)", version or "")
    return (int(match.group(1)), int(match.group(2))) if match else None


def supports(api: str, torch: TorchVersion) -> bool | None:
    """Whether the torch that recorded the run has `api` (a key of API): None where its version's
    bounds do not decide."""
    needed = API[api][0]
    if torch.low is not None and torch.low >= needed:
        return True
    if torch.high is not None and torch.high < needed:
        return False
    return None


def requirement(api: str, torch: TorchVersion) -> str:
    """"" where the run's torch has `api`, else the sentence the advice carries: "torch.compile
    needs torch >= 2.0; this run was recorded with torch 1.9 or earlier"."""
    if supports(api, torch):
        return ""
    needed, name = API[api]
    recorded = ("the torch that recorded this run is not known" if torch.text == "not known"
                else f"this run was recorded with torch {torch.text}")
    return f"{name} needs torch >= {_dotted(needed)}; {recorded}"


def _dotted(version: Version) -> str:
    return f"{version[0]}.{version[1]}"
