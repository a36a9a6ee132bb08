"""Stored runs for the commands that draw them again (`report`, `runs show`, `runs compare`): a
Record from a file or the store, and two stored runs compared."""

from __future__ import annotations

from pathlib import Path

from torchdoctor.analyse import RunComparison, compare_records
from torchdoctor.record import Record
from torchdoctor.store import RunStore


def load_record(source: str, store_path: Path) -> Record:
    """The Record saved in the file `source`, or else the stored run it names (an id, a unique
    prefix of one, or 'last')."""
    if Path(source).is_file():
        return Record.load(source)
    return load_stored(source, store_path)


def load_stored(run_id: str, store_path: Path) -> Record:
    """The stored run `run_id` (an id, a unique prefix of one, or 'last')."""
    with RunStore(store_path) as runs:
        return runs.load(run_id)


def compare_stored(run_a: str, run_b: str, store_path: Path) -> RunComparison:
    """Two stored runs side by side: A is the baseline, B the run compared with it."""
    with RunStore(store_path) as runs:
        return compare_records(runs.load(run_a), runs.load(run_b))
