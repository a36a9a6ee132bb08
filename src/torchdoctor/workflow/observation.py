"""The one path every command takes to observe a script: a new run id, its artefact folder beside
the store, the progress display, then `torchdoctor.observe.observe`."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from torchdoctor.observe import LaunchConfig, ObserveConfig, observe
from torchdoctor.record import Record, new_run_id
from torchdoctor.report.progress import observation_progress
from torchdoctor.store import RunStore, run_dir_for


def observe_with_progress(script: str, args: Sequence[str], config: ObserveConfig, launch: LaunchConfig, *,
                          store_path: Path, run_id: str | None = None) -> Record:
    """Observe SCRIPT under a progress bar; its artefacts go to the run's folder beside the store."""
    run_id = run_id or new_run_id()
    with observation_progress() as progress:
        return observe(script, args, config, launch, out_dir=run_dir_for(store_path, run_id), progress=progress,
                       run_id=run_id)


def store_records(store_path: Path, records: Sequence[Record]) -> None:
    """Save every Record in the store at `store_path`."""
    with RunStore(store_path) as store:
        for record in records:
            store.save(record)
