"""This machine's speed of light: the FLOP/s a square matrix product reaches per dtype, and the bytes
per second of a large copy, measured with torch.utils.benchmark in the script's process (its
threads, its device) and cached per machine beside the store.

A datasheet figure is not what this process can reach (a shared CPU, a capped clock, the script's
thread count), so the peak is measured, the way Nsight Compute's "speed of light" and nanoGPT's
`estimate_mfu` compare a kernel with what the hardware does. The cache key is the machine's
fingerprint (CPU model, GPU name, torch version, threads, device, dtype), so the next run on the
same machine reuses the figure; a cached figure says so. A measurement that fails (no memory, a
dtype the device does not run) is "not measured", with why, and the rest of the value stays.
"""

from __future__ import annotations

import json
import os
import platform
from pathlib import Path
from typing import Any

import torch
import torch.utils.benchmark as benchmark

#: Square matrix sizes of the product, per device: large enough for the fastest kernel.
MATMUL_N = {"cpu": 1024, "cuda": 8192}
#: Bytes of the copied tensor, per device: far beyond the caches.
COPY_BYTES = {"cpu": 256 * 2**20, "cuda": 2 * 2**30}
DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16, "fp64": torch.float64}
MIN_RUN_S = 0.2


def peaks_cache_path(out_dir: str) -> Path | None:
    """The cache file beside the store whose run folder is `out_dir` (`<store>/runs/<id>`); None
    for a run kept in a temporary folder (nothing is cached then)."""
    run = Path(out_dir)
    return run.parent.parent / "peaks.json" if out_dir and run.parent.name == "runs" else None


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine_key(device: str, dtype: str) -> str:
    """What a cached peak is valid for: this machine, torch, thread count, device and dtype."""
    gpu = torch.cuda.get_device_name() if device == "cuda" else ""
    return "|".join([_cpu_model(), gpu, torch.__version__, str(torch.get_num_threads()), device, dtype])


def _time_s(statement: str, env: dict[str, Any]) -> float:
    """The median time of `statement` (torch.utils.benchmark synchronises a CUDA device)."""
    return benchmark.Timer(stmt=statement, globals=env).blocked_autorange(min_run_time=MIN_RUN_S).median


def matmul_flops_per_s(device: str, dtype: str) -> float:
    n = MATMUL_N[device] // (2 if device == "cpu" and dtype != "fp32" else 1)
    a = torch.randn(n, n, device=device).to(DTYPES[dtype])
    b = torch.randn(n, n, device=device).to(DTYPES[dtype])
    return 2 * n**3 / _time_s("torch.mm(a, b)", {"torch": torch, "a": a, "b": b})


def copy_bytes_per_s(device: str) -> float:
    src = torch.empty(COPY_BYTES[device] // 4, device=device)
    dst = torch.empty_like(src)
    return 2 * COPY_BYTES[device] / _time_s("dst.copy_(src)", {"dst": dst, "src": src})


def _read(cache: Path | None) -> dict[str, float]:
    try:
        data = json.loads(cache.read_text()) if cache else {}
    except (OSError, ValueError):
        return {}
    return {k: float(v) for k, v in data.items() if isinstance(v, (int, float))} if isinstance(data, dict) else {}


def _write(cache: Path | None, figures: dict[str, float]) -> None:
    if cache is None:
        return
    try:
        tmp = cache.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps({**_read(cache), **figures}, indent=1))
        tmp.replace(cache)
    except OSError:
        pass  # not cached: the next run measures again


def _load() -> tuple[float | None, int]:
    """(the 1-minute load average, the cores this process may use)."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    try:
        return os.getloadavg()[0], cores
    except OSError:
        return None, cores


def measure_peaks(device: str, dtypes: list[str], cache: Path | None) -> dict[str, Any]:
    """{'device', 'threads', 'flops_per_s': {dtype: figure}, 'bytes_per_s', 'cached',
    'not_measured': {what: why}, 'load_average', 'cores'}: each figure from the cache when it holds
    this machine's, else measured now, and cached only when the machine was not busy (a load
    average above the cores: other processes took the cores, and the figure would read low)."""
    cached, fresh, missing = _read(cache), {}, {}
    load, cores = _load()
    wanted = {f"matmul:{d}": d for d in dtypes if d in DTYPES} | {"copy": ""}
    for what in sorted(set(dtypes) - set(DTYPES)):
        missing[what] = "no matrix-product benchmark for this dtype"
    for what, dtype in wanted.items():
        key = machine_key(device, what)
        if key in cached:
            continue
        try:
            fresh[key] = matmul_flops_per_s(device, dtype) if dtype else copy_bytes_per_s(device)
        except (RuntimeError, MemoryError) as exc:
            missing[what] = f"could not run: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}"
    _write(cache if load is None or load <= cores else None, fresh)
    known = {**cached, **fresh}
    flops = {d: known[machine_key(device, f"matmul:{d}")] for d in dtypes if machine_key(device, f"matmul:{d}") in known}
    copy = known.get(machine_key(device, "copy"))
    return {"device": device, "threads": torch.get_num_threads(), "flops_per_s": flops, "bytes_per_s": copy,
            "cached": sorted(k.rsplit("|", 1)[1] for k in cached if k in {machine_key(device, w) for w in wanted}),
            "not_measured": missing, "load_average": load, "cores": cores}
