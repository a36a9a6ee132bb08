"""Stored runs for the commands that draw them again (`report`, `runs show`, `runs compare`): a
Record from a file or the store, and two stored runs compared."""

from __future__ import annotations

import os
from pathlib import Path

from torchdoctor.analyse import RunComparison, compare_records
from torchdoctor.analyse.sections import check_sections
from torchdoctor.errors import StoreError
from torchdoctor.record import Record
from torchdoctor.store import RunStore


def load_record(source: str, store_path: Path) -> Record:
    """The Record saved in the file `source`, or else the stored run it names (an id, a unique
    prefix of one, or 'last'). A path that exists but is not a regular file is refused as one (a
    FIFO would block); a name that is no file is looked up in an existing store, never a new one.
    Its analysis sections are checked (RecordFormatError naming a field)."""
    if os.path.lexists(source):
        return check_sections(Record.load(source))
    try:
        return load_stored(source, store_path)
    except StoreError as exc:
        if store_path.exists():
            raise
        raise StoreError(f"{source} is not a file, and there is no run store at {store_path} to look it up "
                         "in (pass --store PATH)") from exc


def load_stored(run_id: str, store_path: Path) -> Record:
    """The stored run `run_id` (an id, a unique prefix of one, or 'last') of an existing store,
    its sections checked."""
    with RunStore(store_path, create=False) as runs:
        return check_sections(runs.load(run_id))


def compare_stored(run_a: str, run_b: str, store_path: Path) -> RunComparison:
    """Two stored runs side by side: A is the baseline, B the run compared with it."""
    with RunStore(store_path, create=False) as runs:
        return compare_records(check_sections(runs.load(run_a)), check_sections(runs.load(run_b)))
