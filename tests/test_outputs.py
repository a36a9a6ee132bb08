"""An output file is written whole or not at all, and a failure names the output; values orjson
cannot encode (surrogates from the OS, integers beyond 64 bits) are encoded, never lost."""

from __future__ import annotations

import math
import os
from pathlib import Path

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from torchdoctor import outputs
from torchdoctor.outputs import OUTPUT_EXIT_CODE, OutputError, dumps_json, write_atomic


def test_a_file_is_written_and_no_temporary_file_is_left(tmp_path: Path):
    target = tmp_path / "sub" / "r.json"
    assert write_atomic(target, b"{}") == target
    assert target.read_bytes() == b"{}" and os.listdir(target.parent) == ["r.json"]
    assert target.stat().st_mode & 0o777 == 0o666 & ~_umask()


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_pieces_are_written_in_order_and_a_piece_that_fails_leaves_the_previous_file(tmp_path: Path):
    target = tmp_path / "r.json"
    write_atomic(target, iter([b"{", b'"a": 1', b"}"]))
    assert target.read_bytes() == b'{"a": 1}'

    def failing():
        yield b"{"
        raise orjson.JSONEncodeError("a value orjson cannot encode")

    with pytest.raises(orjson.JSONEncodeError):
        write_atomic(target, failing())
    assert target.read_bytes() == b'{"a": 1}' and os.listdir(tmp_path) == ["r.json"]


def test_a_full_disk_leaves_the_previous_file_whole_and_names_the_output(tmp_path: Path, monkeypatch):
    target = tmp_path / "r.json"
    target.write_bytes(b'{"old": 1}')

    def full(fd: int, mode: str = "r", *args, **kwargs):
        handle = open(fd, mode, *args, **kwargs)  # noqa: SIM115 (returned to the caller)
        handle.write = lambda data: (_ for _ in ()).throw(OSError(28, "No space left on device"))
        return handle

    monkeypatch.setattr(outputs.os, "fdopen", full)
    with pytest.raises(OutputError, match=r"cannot write --json .*r.json: No space left on device"):
        write_atomic(target, b'{"new": 1}', what="--json")
    assert target.read_bytes() == b'{"old": 1}' and os.listdir(tmp_path) == ["r.json"]


def test_dev_full_is_written_in_place_and_its_failure_is_an_output_error():
    with pytest.raises(OutputError, match="cannot write --json /dev/full: No space left on device") as raised:
        write_atomic("/dev/full", b"{}", what="--json")
    assert raised.value.exit_code == OUTPUT_EXIT_CODE == 5


def test_a_folder_is_refused(tmp_path: Path):
    with pytest.raises(OutputError, match="it is a directory"):
        write_atomic(tmp_path, b"{}", what="--html")


def test_an_unwritable_folder_is_an_output_error(tmp_path: Path):
    (tmp_path / "ro").mkdir(mode=0o500)
    if os.access(tmp_path / "ro", os.W_OK):
        pytest.skip("running as a user that writes anywhere")
    with pytest.raises(OutputError, match="Permission denied"):
        write_atomic(tmp_path / "ro" / "r.json", b"{}")


def test_a_surrogate_escaped_name_is_written_with_its_bytes_shown():
    name = b"train-\xff.py".decode("utf-8", "surrogateescape")
    assert orjson.loads(dumps_json({"script": name, "argv": [name]})) == {"script": "train-\\xff.py",
                                                                           "argv": ["train-\\xff.py"]}


def test_integers_beyond_64_bits_become_floats_or_their_text():
    data = orjson.loads(dumps_json({"steps": 99999999999999999999, "n": -(2**70), "huge": 10**400, "ok": 2**64 - 1}))
    assert data == {"steps": 1e20, "n": -float(2**70), "huge": "1" + "0" * 400, "ok": 2**64 - 1}


_VALUES = st.recursive(
    st.none() | st.booleans() | st.floats(allow_nan=False) | st.integers() | st.text(st.characters(codec=None)),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4),
    max_leaves=20)


@settings(max_examples=50, deadline=None)
@given(_VALUES)
def test_any_json_like_value_is_encoded_and_what_orjson_takes_is_unchanged(value):
    data = dumps_json(value)
    try:
        expected = orjson.dumps(value)
    except orjson.JSONEncodeError:
        orjson.loads(data)  # encoded all the same, as valid JSON
    else:
        assert data == expected


def test_a_value_given_to_default_is_made_encodable_too():
    class Odd:
        pass

    assert orjson.loads(dumps_json({"x": Odd()}, default=lambda o: {"n": 2**80})) == {"x": {"n": float(2**80)}}
    assert math.isfinite(orjson.loads(dumps_json([2**64]))[0])


def test_ordinary_integers_beside_an_undecodable_name_stay_integers():
    document = {"script": os.fsdecode(b"run\xff.py"), "steps": 5, "exit": {"status": 0}}
    assert orjson.loads(dumps_json(document, default=str)) == {"script": "run\\xff.py", "steps": 5,
                                                               "exit": {"status": 0}}
