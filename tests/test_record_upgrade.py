"""A Record stored before the probes' values moved into `probes` (schema 1) loads as the current
schema, from a JSON file and from the run store, with each probe's value under its name."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import orjson
import pytest

from torchdoctor.errors import RecordFormatError
from torchdoctor.probe_values import ANOMALY, COMPILE_SPEED, HANDOFF, THREADS
from torchdoctor.record import SCHEMA_VERSION, Record
from torchdoctor.store import RunStore

SCHEMA_1 = Path(__file__).resolve().parent / "fixtures" / "records" / "schema_1_probed.json"
OLD_FIELDS = ("threads_probe", "anomaly_probe", "compile_probe", "handoff_probe")


def _assert_probes_moved(record: Record) -> None:
    assert record.schema_version == SCHEMA_VERSION == 2
    assert sorted(record.probes) == ["compile_speed", "handoff", "threads"]  # a null field (anomaly) moves as absent
    assert THREADS.of(record)["tried_threads"] == 2 and THREADS.of(record)["verdict"] == "faster"
    assert COMPILE_SPEED.of(record)["lead_in_s"] == 8.4 and HANDOFF.of(record)["handoff_ms"] == 0.93
    assert ANOMALY.of(record) is None


def test_a_schema_1_record_file_loads_with_its_probe_fields_moved_into_probes(tmp_path) -> None:
    record = Record.load(SCHEMA_1)
    _assert_probes_moved(record)
    saved = orjson.loads(record.save(tmp_path / "again.json").read_bytes())
    assert saved["schema_version"] == SCHEMA_VERSION and not set(OLD_FIELDS) & set(saved)
    assert Record.load(tmp_path / "again.json") == record


def test_a_schema_1_record_in_the_store_loads_upgraded(tmp_path) -> None:
    path = tmp_path / "runs.db"
    old = orjson.loads(SCHEMA_1.read_bytes())
    with RunStore(path) as store:
        store.save(Record(run_id=old["run_id"]))
    with sqlite3.connect(path) as db:  # the row as a torchdoctor of schema 1 wrote it
        db.execute("UPDATE runs SET record = ? WHERE run_id = ?", (SCHEMA_1.read_bytes(), old["run_id"]))
    with RunStore(path) as store:
        _assert_probes_moved(store.load(old["run_id"]))


def test_a_probe_value_of_the_wrong_type_is_refused_naming_the_probe() -> None:
    old = {**orjson.loads(SCHEMA_1.read_bytes()), "threads_probe": "fast"}
    with pytest.raises(RecordFormatError, match=r"'probes\.threads' should be an object"):
        Record.from_dict(old)
