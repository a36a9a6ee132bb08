"""`torchdoctor memory`'s composition root: a dedicated observation whose point is the memory window."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from torchdoctor.observe import LaunchConfig, ObserveConfig, observe
from torchdoctor.record import Record, _new_run_id
from torchdoctor.report.progress import observation_progress
from torchdoctor.store import RunStore


def memory_config(*, warmup_steps: int = 3, budget_bytes: int | None = None, snapshot: Path | None = None) -> ObserveConfig:
    """Short windows and no profiler: the step measured is the one after them."""
    return ObserveConfig(warmup_steps=warmup_steps, timing_steps=2, profile=False, memory=True,
                         memory_budget_bytes=budget_bytes, memory_snapshot=str(snapshot or ""))  # fmt: skip


def observe_memory(script: str, args: Sequence[str], config: ObserveConfig, launch: LaunchConfig, *,
                   store_path: Path, save: bool = True) -> Record:
    """Observe SCRIPT for its memory window; the Record (with `record.memory`) is stored if `save`."""
    from torchdoctor.workflow import run_dir_for

    run_id = _new_run_id()
    with observation_progress() as progress:
        record = observe(script, args, config, launch, out_dir=run_dir_for(store_path, run_id),
                         progress=progress, run_id=run_id)
    if save:
        with RunStore(store_path) as store:
            store.save(record)
    return record
