"""The stored-run commands' composition: a Record comes from its file or from the store, and two
stored runs are compared, through a real SQLite store."""

from __future__ import annotations

from pathlib import Path

import pytest

from torchdoctor.errors import TorchDoctorError
from torchdoctor.record import Record, StepSample
from torchdoctor.store import RunStore
from torchdoctor.workflow.records import compare_stored, load_record, load_stored


def _record(step_s: float, run_id: str = "20261206-120000-cccccc") -> Record:
    record = Record(script="train.py", run_id=run_id)
    record.steps = [StepSample(index=i, wall_s=step_s * (1 + 0.01 * (i % 3))) for i in range(12)]
    record.summary.step_s = step_s
    return record


@pytest.fixture
def store(tmp_path: Path) -> tuple[Path, Record, Record]:
    path = tmp_path / "runs.db"
    a, b = _record(0.010, "20261206-120000-aaaaaa"), _record(0.015, "20261206-120000-bbbbbb")
    with RunStore(path) as runs:
        runs.save(a)
        runs.save(b)
    return path, a, b


def test_a_record_is_read_from_its_file_before_the_store(tmp_path: Path, store) -> None:
    path, a, _ = store
    saved = _record(0.020).save(tmp_path / "record.json")
    assert load_record(str(saved), path).summary.step_s == 0.020
    assert load_record(a.run_id, path).run_id == a.run_id


def test_a_stored_run_is_found_by_a_unique_prefix_or_as_the_last(store) -> None:
    path, a, b = store
    assert load_stored("20261206-120000-a", path).run_id == a.run_id
    assert load_stored("last", path).run_id == b.run_id


def test_an_unknown_run_is_a_clear_error(store) -> None:
    path, _, _ = store
    with pytest.raises(TorchDoctorError):
        load_record("no-such-run", path)


def test_two_stored_runs_compare_b_against_a(store) -> None:
    path, a, b = store
    comparison = compare_stored(a.run_id, b.run_id, path)
    assert (comparison.a_id, comparison.b_id) == (a.run_id, b.run_id)
    assert comparison.step_change == pytest.approx(0.5)
