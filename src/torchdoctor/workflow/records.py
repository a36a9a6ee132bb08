"""Stored runs for the commands that draw them again (`report`, `runs show`, `runs compare`): a
Record from a file or the store, and two stored runs compared."""

from __future__ import annotations

from pathlib import Path

from torchdoctor.analyse import RunComparison, compare_records
from torchdoctor.analyse.sections import check_sections
from torchdoctor.record import Record
from torchdoctor.store import RunStore


def load_record(source: str, store_path: Path) -> Record:
    """The Record saved in the file `source`, or else the stored run it names (an id, a unique
    prefix of one, or 'last'); its analysis sections checked (RecordFormatError naming a field)."""
    if Path(source).is_file():
        return check_sections(Record.load(source))
    return load_stored(source, store_path)


def load_stored(run_id: str, store_path: Path) -> Record:
    """The stored run `run_id` (an id, a unique prefix of one, or 'last'), its sections checked."""
    with RunStore(store_path) as runs:
        return check_sections(runs.load(run_id))


def compare_stored(run_a: str, run_b: str, store_path: Path) -> RunComparison:
    """Two stored runs side by side: A is the baseline, B the run compared with it."""
    with RunStore(store_path) as runs:
        return compare_records(check_sections(runs.load(run_a)), check_sections(runs.load(run_b)))
