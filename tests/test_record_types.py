"""A Record whose fields have the wrong JSON type is refused on load, naming the field, instead of
failing with a TypeError deep inside a renderer (`torchdoctor report` on a hand-edited file)."""

from __future__ import annotations

import re
import subprocess
import sys

import orjson
import pytest

from torchdoctor.errors import RecordFormatError
from torchdoctor.record import Record, StepSample


def _valid() -> dict:
    return Record(steps=[StepSample(index=0, wall_s=0.1)], warnings=["partial"]).to_dict()


@pytest.mark.parametrize("patch, field", [
    ({"steps": "x"}, "steps"),
    ({"steps": [{"index": 0, "wall_s": "0.1"}]}, "steps[0].wall_s"),
    ({"steps": [{"index": 0}]}, "steps[0].wall_s"),  # missing
    ({"exit": []}, "exit"),
    ({"exit": {"status": "0"}}, "exit.status"),
    ({"summary": {"step_s": "abc"}}, "summary.step_s"),
    ({"summary": {"num_steps": True}}, "summary.num_steps"),
    ({"findings": ["x"]}, "findings"),
    ({"warnings": [1]}, "warnings"),
    ({"env": 5}, "env"),
    ({"argv": "a b"}, "argv"),
    ({"trace": []}, "trace"),
])
def test_a_wrongly_typed_field_is_refused_with_its_name(patch, field):
    with pytest.raises(RecordFormatError, match=re.escape(field)):
        Record.from_dict({**_valid(), **patch})


def test_numbers_may_be_ints_where_floats_are_expected_and_optional_sections_null():
    data = {**_valid(), "steps": [{"index": 0, "wall_s": 1}], "trace": None, "summary": {"step_s": None}}
    assert Record.from_dict(data).steps[0].wall_s == 1


def test_report_on_a_wrongly_typed_record_is_a_one_line_error(tmp_path):
    path = tmp_path / "record.json"
    path.write_bytes(orjson.dumps({**_valid(), "summary": {"step_s": "abc"}}))
    proc = subprocess.run([sys.executable, "-m", "torchdoctor", "report", str(path)], capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 2
    assert "summary.step_s" in proc.stderr and "Traceback" not in proc.stderr
