"""Persistence of Records and tuner trials in SQLite, and where a run's artefacts live."""

from torchdoctor.record import RunRow
from torchdoctor.store.folder import make_store_folder
from torchdoctor.store.sqlite import DEFAULT_STORE, RunStore, run_dir_for

__all__ = ["DEFAULT_STORE", "RunRow", "RunStore", "make_store_folder", "run_dir_for"]
