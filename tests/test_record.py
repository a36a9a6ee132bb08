"""The Record is a versioned value: it round-trips through JSON and refuses what it cannot read."""

from __future__ import annotations

import pytest

from torchdoctor.errors import RecordFormatError
from torchdoctor.record import SCHEMA_VERSION, Record, StepSample, Summary


def test_a_record_round_trips_through_json(tmp_path):
    record = Record(script="train.py", argv=["--epochs", "2"], step_detection="optimizer",
                    steps=[StepSample(index=0, wall_s=0.1, data_wait_s=0.05, loss=1.5)],
                    summary=Summary(num_steps=1, step_s=0.1), env={"torch": {"num_threads": 2}})
    loaded = Record.load(record.save(tmp_path / "r.json"))
    assert loaded == record
    assert loaded.to_dict()["schema_version"] == SCHEMA_VERSION


def test_unknown_keys_from_a_newer_minor_writer_are_ignored():
    data = Record().to_dict() | {"a_key_added_later": 1}
    assert Record.from_dict(data).schema_version == SCHEMA_VERSION


def test_a_record_from_a_newer_schema_is_refused_with_advice():
    data = Record().to_dict() | {"schema_version": SCHEMA_VERSION + 1}
    with pytest.raises(RecordFormatError, match="upgrade torchdoctor"):
        Record.from_dict(data)


@pytest.mark.parametrize("text, message", [(b"{not json", "invalid JSON"), (b"[1, 2]", "schema_version"),
                                           (b'{"schema_version": 0}', "invalid schema_version")])
def test_what_is_not_a_record_is_refused_clearly(text, message):
    with pytest.raises(RecordFormatError, match=message):
        Record.from_json(text)
