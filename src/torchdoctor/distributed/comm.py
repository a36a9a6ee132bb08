"""`torchdoctor comm`: launch the collective sweep through torch.distributed.run and judge it.

The sweep itself runs in `comm_worker` (one process per rank); this module builds the torchrun
command, runs it, and turns rank 0's results into the public JSON document (docs/distributed.md).
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from torchdoctor.distributed.collectives import COLLECTIVES, bus_factor
from torchdoctor.distributed.errors import CommError
from torchdoctor.distributed.expected import FAR_BELOW_FRACTION, expected_bandwidth
from torchdoctor.distributed.launch import log_dir_option
from torchdoctor.finding import Finding, Fix, new_finding

#: 2: `findings` are Findings (torchdoctor.finding, ids TD-SCALE-NNN) instead of {id, collective, message} dicts.
SCHEMA_VERSION = 2
#: The sweep's findings (docs/rules.md).
UNSUPPORTED, INCORRECT, FAR_BELOW_THEORETICAL = "TD-SCALE-011", "TD-SCALE-012", "TD-SCALE-013"


@dataclass(kw_only=True, slots=True)
class CommConfig:
    nproc_per_node: int = 2
    backend: str = "auto"
    """"gloo", "nccl", or "auto" (NCCL when every rank gets its own GPU, else gloo)."""
    ops: list[str] = field(default_factory=lambda: list(COLLECTIVES))
    min_bytes: int = 8
    max_bytes: int = 1 << 25
    step_factor: int = 2
    iters: int = 20
    warmup_iters: int = 5
    torchrun_args: list[str] = field(default_factory=list)
    """Extra torchrun options (e.g. --nnodes, --rdzv-endpoint); none: --standalone on a free port."""
    timeout_s: float = 600.0

    def __post_init__(self) -> None:
        if self.nproc_per_node < 1:
            raise CommError(f"--nproc-per-node must be >= 1, got {self.nproc_per_node}")
        if self.backend not in ("auto", "gloo", "nccl"):
            raise CommError(f"unknown backend {self.backend!r}: use gloo, nccl or auto")
        unknown = sorted(set(self.ops) - set(COLLECTIVES))
        if unknown:
            raise CommError(f"unknown collective(s) {', '.join(unknown)}; known: {', '.join(COLLECTIVES)}")
        if self.min_bytes < 1 or self.max_bytes < self.min_bytes:
            raise CommError(f"need 1 <= --min-bytes <= --max-bytes, got {self.min_bytes} and {self.max_bytes}")
        if self.step_factor < 2 or self.iters < 1 or self.warmup_iters < 0:
            raise CommError("need --step-factor >= 2, --iters >= 1 and --warmup >= 0")


def resolve_backend(backend: str, nproc_per_node: int) -> str:
    """The backend "auto" stands for on this machine."""
    if backend != "auto":
        return backend
    import torch

    if torch.cuda.is_available() and torch.cuda.device_count() >= nproc_per_node:
        return "nccl"
    return "gloo"


def build_command(config: CommConfig, backend: str, out: Path) -> list[str]:
    rendezvous = config.torchrun_args or ["--standalone"]
    logs = log_dir_option(rendezvous, str(out.parent / "torchrun-logs"))  # removed with `out`'s folder
    return [
        sys.executable, "-m", "torch.distributed.run", f"--nproc-per-node={config.nproc_per_node}", *logs, *rendezvous,
        "-m", "torchdoctor.distributed.comm_worker", "--out", str(out), "--backend", backend,
        "--ops", *config.ops, "--min-bytes", str(config.min_bytes), "--max-bytes", str(config.max_bytes),
        "--step-factor", str(config.step_factor), "--iters", str(config.iters),
        "--warmup", str(config.warmup_iters),
    ]


def run_comm(config: CommConfig) -> dict[str, Any]:
    """Run the sweep and return the JSON document; CommError when the ranks fail or time out."""
    backend = resolve_backend(config.backend, config.nproc_per_node)
    with tempfile.TemporaryDirectory(prefix="torchdoctor-comm-") as tmp:
        out = Path(tmp) / "comm.json"
        command = build_command(config, backend, out)
        try:
            proc = subprocess.run(command, capture_output=True, text=True, timeout=config.timeout_s)
        except subprocess.TimeoutExpired as exc:
            raise CommError(f"the sweep did not finish within {config.timeout_s:.0f} s (a rendezvous that "
                            "never completed, or sizes too large: lower --max-bytes)") from exc
        if proc.returncode != 0 or not out.exists():
            tail = "\n".join(proc.stderr.strip().splitlines()[-8:])
            raise CommError(f"the sweep's ranks failed (exit {proc.returncode}):\n{tail}")
        raw = orjson.loads(out.read_bytes())
    return build_document(raw, config, backend)


def build_document(raw: dict[str, Any], config: CommConfig, backend: str) -> dict[str, Any]:
    """The public document from rank 0's raw results: factors, peaks, expected figure, findings."""
    meta = raw["meta"]
    n = meta["world_size"]
    expected = expected_bandwidth(backend, meta["device_name"], meta["nnodes"])
    collectives = {}
    for op, result in raw["collectives"].items():
        rows = result["rows"]
        peak = max((r["busbw_gb_per_s"] for r in rows), default=None)
        collectives[op] = {**result, "bus_factor": bus_factor(op, n), "peak_busbw_gb_per_s": peak}
    doc = {
        "schema_version": SCHEMA_VERSION,
        "backend": backend,
        **meta,
        "dtype": "float32",
        "iters": config.iters,
        "warmup_iters": config.warmup_iters,
        "expected_busbw_gb_per_s": expected.busbw_gb_per_s if expected else None,
        "expected_source": expected.source if expected else None,
        "collectives": collectives,
    }
    doc["findings"] = [f.to_dict() for f in comm_findings(doc)]
    return doc


def comm_findings(doc: dict[str, Any]) -> list[Finding]:
    """Unsupported collectives, wrong results, and peaks far below the expected bandwidth. The sweep
    measures no training step, so their upside is 0 and the severity ranks them."""
    findings = []
    expected = doc["expected_busbw_gb_per_s"]
    for op, result in doc["collectives"].items():
        if not result["supported"]:
            findings.append(new_finding(
                UNSUPPORTED, "scale", "warning", f"{op} is not supported by {doc['backend']}: {result['reason']}",
                0.0, {"collective": op, "backend": doc["backend"]},
                "A job that calls this collective with this backend fails; the sweep reports it rather than "
                "dropping it.",
                Fix("Use a backend that implements it (NCCL on GPUs), or express the exchange with collectives "
                    "this backend has.", f"torchdoctor comm --backend nccl --ops {op}")))
            continue
        wrong = [r["size_bytes"] for r in result["rows"] if not r["correct"]]
        if wrong:
            findings.append(new_finding(
                INCORRECT, "scale", "problem", f"{op} returned wrong values at sizes {wrong} bytes", 0.0,
                {"collective": op, "wrong_sizes_bytes": wrong, "backend": doc["backend"]},
                "A collective that returns wrong values corrupts training silently (gradients averaged wrongly).",
                Fix("Check the backend's and the driver's versions and the interconnect, then rerun the sweep.",
                    f"NCCL_DEBUG=INFO torchdoctor comm --ops {op}")))
        peak = result["peak_busbw_gb_per_s"]
        if expected and peak is not None and peak < FAR_BELOW_FRACTION * expected:
            findings.append(new_finding(
                FAR_BELOW_THEORETICAL, "scale", "warning",
                f"{op} peaks at {peak:.1f} GB/s bus bandwidth, {peak / expected:.0%} of the {expected:.0f} GB/s "
                f"the interconnect offers ({doc['expected_source']})", 0.0,
                {"collective": op, "peak_busbw_gb_per_s": peak, "expected_busbw_gb_per_s": expected,
                 "peak_of_expected_fraction": peak / expected},
                "Every all-reduce of a training step moves data at this rate; far below the interconnect's "
                "figure, the traffic takes a slower path (PCIe or sockets instead of NVLink/InfiniBand) or "
                "the messages are too small to reach the peak.",
                Fix("Check NCCL_P2P/NCCL_IB settings, the GPU topology (nvidia-smi topo -m) and raise --max-bytes.",
                    "nvidia-smi topo -m\nNCCL_DEBUG=INFO torchdoctor comm --max-bytes 1073741824")))
    return findings
