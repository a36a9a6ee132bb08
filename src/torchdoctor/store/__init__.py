"""Persistence of Records and tuner trials in SQLite, and comparison of two stored runs."""

from torchdoctor.store.compare import RunComparison, compare_records
from torchdoctor.store.sqlite import DEFAULT_STORE, RunRow, RunStore

__all__ = ["DEFAULT_STORE", "RunComparison", "RunRow", "RunStore", "compare_records"]
