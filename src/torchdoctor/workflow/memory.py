"""`torchdoctor memory`'s composition root: a dedicated observation whose point is the memory window."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from torchdoctor.launch import LaunchConfig, ObserveConfig
from torchdoctor.record import Record
from torchdoctor.workflow.observation import ObserveRequest, observe_with_progress, store_records


def memory_config(*, warmup_steps: int = 3, budget_bytes: int | None = None, snapshot: Path | None = None) -> ObserveConfig:
    """Short windows and no profiler: the step measured is the one after them."""
    return ObserveConfig(warmup_steps=warmup_steps, timing_steps=2, profile=False, memory=True,
                         memory_budget_bytes=budget_bytes, memory_snapshot=str(snapshot or ""),
                         threads_probe=False)  # fmt: skip


def observe_memory(script: str, args: Sequence[str], config: ObserveConfig, launch: LaunchConfig, *,
                   store_path: Path, save: bool = True) -> Record:
    """Observe SCRIPT for its memory window; the Record (with `record.memory`) is stored if `save`."""
    record = observe_with_progress(ObserveRequest(script, args, config, launch, store_path), save=save)
    if save:
        store_records(store_path, [record])
    return record
