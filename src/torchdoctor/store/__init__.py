"""Persistence of Records and tuner trials in SQLite, and where a run's artefacts live."""

from torchdoctor.record import RunRow
from torchdoctor.store.sqlite import DEFAULT_STORE, RunStore, run_dir_for

__all__ = ["DEFAULT_STORE", "RunRow", "RunStore", "run_dir_for"]
