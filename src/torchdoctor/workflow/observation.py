"""The one path every command takes to observe a script: a new run id, its artefact folder, the
progress display, then `torchdoctor.observe.observe`; and the one way to keep Records in the store.

The artefact folder is the run's folder beside the store, except when the run is not to be saved
(`--no-save` never touches the store, not even to create its folder, and its temporary folder
is removed when the command ends) or when that folder cannot be
written (a read-only or misplaced store): then a temporary folder, and the Record says so. A store
that cannot be written is a StoreError raised after everything else was written, by the caller.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from torchdoctor.errors import StoreError
from torchdoctor.launch import LaunchConfig, ObserveConfig, observe
from torchdoctor.record import Record, new_run_id
from torchdoctor.report.progress import observation_progress
from torchdoctor.store import RunStore, make_store_folder, run_dir_for


def run_folder(store_path: Path, run_id: str, *, save: bool = True) -> tuple[Path, str | None]:
    """Where a run's artefacts go, and why not beside the store when they cannot (else None)."""
    if save:
        folder = run_dir_for(store_path, run_id)
        try:
            make_store_folder(Path(store_path).parent)
            folder.mkdir(parents=True, exist_ok=True)
            return folder, None
        except OSError as exc:
            reason = f"cannot write the run folder {folder} ({exc.strerror or exc})"
    else:
        reason = None
    temporary = Path(tempfile.mkdtemp(prefix=f"torchdoctor-{run_id}-"))
    if reason is None:  # --no-save: nothing of the run outlives the command
        atexit.register(_remove_folder, temporary, os.getpid())
    return temporary, (f"{reason}; the run's artefacts are in {temporary}" if reason else None)


def _remove_folder(folder: Path, owner: int) -> None:
    """Remove a --no-save run's temporary folder when the command ends (in the process that made
    it only: a process forked from it ends without touching it)."""
    if os.getpid() == owner:
        shutil.rmtree(folder, ignore_errors=True)


@dataclass(frozen=True, slots=True)
class ObserveRequest:
    """What a command asks to observe: `script` run with `args`, observed under `config` and
    launched under `launch`, for the store at `store_path` (its runs' artefacts go beside it)."""

    script: str
    args: Sequence[str]
    config: ObserveConfig
    launch: LaunchConfig
    store_path: Path


def observe_with_progress(request: ObserveRequest, *, run_id: str | None = None, save: bool = True) -> Record:
    """Observe the script `request` names under a progress bar; its artefacts go to `run_folder`
    (`save` off: a temporary folder)."""
    run_id = run_id or new_run_id()
    out_dir, fallback = run_folder(request.store_path, run_id, save=save)
    with observation_progress() as progress:
        record = observe(request.script, request.args, request.config, request.launch, out_dir=out_dir,
                         progress=progress, run_id=run_id)
    if fallback:
        record.warnings.append(fallback)
    return record


def store_records(store_path: Path, records: Sequence[Record]) -> None:
    """Save every Record in the store at `store_path` (StoreError when it cannot be written)."""
    with RunStore(store_path) as store:
        for record in records:
            store.save(record)


def try_store(store_path: Path, records: Sequence[Record]) -> StoreError | None:
    """`store_records`, returning the error instead of raising it, so that the caller still writes
    its other outputs (console report, --json, --html) before failing; each Record says it was not
    stored."""
    try:
        store_records(store_path, records)
    except StoreError as exc:
        for record in records:
            record.warnings.append(f"not stored: {exc}")
        return exc
    return None
