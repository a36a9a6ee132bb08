"""CUDA caching-allocator figures and memory-history recording, behind capability checks.

`torch.cuda.memory._record_memory_history` is private and its signature changed between
releases (torch < 2.1: `enabled: bool`; later: `enabled: "all" | "state" | None`,
`max_entries`), so `history_support()` inspects it before anything calls it.
"""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

import torch

from torchdoctor.compile.probe import torch_version


def cuda_in_use() -> bool:
    return torch.cuda.is_available() and torch.cuda.is_initialized()


def reset_peak() -> None:
    if cuda_in_use():
        torch.cuda.reset_peak_memory_stats()


def allocator_figures() -> dict[str, Any] | None:
    """allocated/reserved/peak bytes and fragmentation of the current CUDA device, or None.

    fragmentation = inactive split bytes / reserved bytes: memory the allocator holds in
    blocks that are split and free, unusable for a larger request without a new segment.
    """
    if not cuda_in_use():
        return None
    stats = torch.cuda.memory_stats()
    reserved = stats.get("reserved_bytes.all.current", 0)
    return {
        "device": f"cuda:{torch.cuda.current_device()}",
        "allocated_bytes": stats.get("allocated_bytes.all.current", 0),
        "reserved_bytes": reserved,
        "peak_allocated_bytes": stats.get("allocated_bytes.all.peak", 0),
        "peak_reserved_bytes": stats.get("reserved_bytes.all.peak", 0),
        "fragmentation": stats.get("inactive_split_bytes.all.current", 0) / reserved if reserved else 0.0,
        "num_alloc_retries": stats.get("num_alloc_retries", 0),
        "num_ooms": stats.get("num_ooms", 0),
    }


def history_support() -> str | None:
    """None when memory history can be recorded here, else why not."""
    if not torch.cuda.is_available():
        return "memory snapshots need a CUDA device"
    record = getattr(torch.cuda.memory, "_record_memory_history", None)
    dump = getattr(torch.cuda.memory, "_dump_snapshot", None)
    if record is None or dump is None:
        return f"memory history is unavailable on torch {torch_version()}"
    return None


def start_history(max_entries: int = 100_000) -> None:
    """Start recording allocations with stacks, whichever signature this torch has."""
    record = torch.cuda.memory._record_memory_history
    params = inspect.signature(record).parameters
    if "max_entries" in params:
        record(enabled="all", max_entries=max_entries)
    else:
        record(True)


def stop_history(path: Path) -> Path:
    """Write the snapshot (pickle) to `path` and stop recording."""
    torch.cuda.memory._dump_snapshot(str(path))
    record = torch.cuda.memory._record_memory_history
    if "max_entries" in inspect.signature(record).parameters:
        record(enabled=None)
    else:
        record(False)
    return path
