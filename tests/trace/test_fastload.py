"""The loader's fast path (trace/fastload.py, msgspec) gives exactly what the streaming parser gives,
and hands every file it cannot read exactly back to it."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest

from torchdoctor.errors import TraceFormatError
from torchdoctor.trace import fastload, load_trace, loader
from tests.trace.same import assert_same_trace

pytest.importorskip("msgspec")

FIXTURES = Path(__file__).resolve().parent / "fixtures"


def _both(path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple:
    fast = load_trace(path)
    with monkeypatch.context() as m:
        m.setattr(fastload, "msgspec", None)
        slow = load_trace(path)
    return fast, slow


@pytest.mark.parametrize("name", ["torch1.8dev-cuda-array-root.2steps.json.gz",
                                  "rocm-mi300x-vllm-graph-capture-memory.json.gz",
                                  "mtia-inference.json.gz", "torch1.9-cuda-resnet50-workers4.2steps.json.gz"])
def test_the_fast_path_reads_what_the_streaming_parser_reads(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    assert_same_trace(*_both(FIXTURES / name, monkeypatch))


def test_small_pieces_cut_between_events_read_theassert_same_trace(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fastload, "CHUNK_BYTES", 64 << 10)
    monkeypatch.setattr(fastload, "READ_BYTES", 16 << 10)
    assert_same_trace(*_both(FIXTURES / "torch1.9-cuda-resnet50-workers4.2steps.json.gz", monkeypatch))


def _write(tmp_path: Path, events: list, **meta) -> Path:
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": events, **meta}))
    return path


EVENT = {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 10, "dur": 5,
         "args": {"External id": 3}}


@pytest.mark.parametrize("odd", [
    {**EVENT, "ts": "12.5"},  # a string timestamp
    {**EVENT, "args": {"correlation": 1.5}},  # a float id
    {**EVENT, "args": {"shapes": [{"a": 1}, {"b": 2}]}},  # objects in a list: a cut candidate inside an event
    {**EVENT, "name": "x}, {\"", "dur": -3},  # an event boundary lookalike in a name; a negative duration
])
def test_unusual_events_read_the_same_through_the_streaming_parser(odd: dict, tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fastload, "CHUNK_BYTES", 256)
    monkeypatch.setattr(fastload, "READ_BYTES", 128)
    events = [{**EVENT, "ts": 10 * i} for i in range(40)]
    events.insert(20, odd)
    assert_same_trace(*_both(_write(tmp_path, events, traceName="t", distributedInfo={"rank": 3}), monkeypatch))


def test_a_truncated_file_falls_back_and_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    text = json.dumps({"traceEvents": [{**EVENT, "ts": 10 * i} for i in range(50)]})
    path = tmp_path / "cut.json.gz"
    with gzip.open(path, "wt") as f:
        f.write(text[: len(text) // 2])
    fast, slow = _both(path, monkeypatch)
    assert_same_trace(fast, slow)
    assert fast.truncated and 0 < len(fast) < 50


@pytest.mark.parametrize("keep", [-2, -9, -30])  # inside the last key, inside its value, after the list's `]`
def test_a_file_cut_in_the_metadata_after_the_event_list_is_truncated_on_both_paths(
        keep: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    text = json.dumps({"traceEvents": [{**EVENT, "ts": 10 * i} for i in range(50)], "traceName": "t",
                       "deviceProperties": [{"id": 0, "name": "cpu"}]})
    path = tmp_path / "cut.json"
    path.write_text(text[:keep])
    fast, slow = _both(path, monkeypatch)
    assert_same_trace(fast, slow)
    assert fast.truncated and len(fast) == 50


def _no_streaming(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail the test if the loader falls back: a bound must be refused by the fast path itself."""
    def refuse(self: object) -> None:
        raise AssertionError("the streaming parser read a file the fast path should have refused")
    monkeypatch.setattr(loader._Parse, "stream", refuse)


@pytest.mark.parametrize("name", ["t.json", "torch1.9-cuda-resnet50-workers4.2steps.json.gz"])
def test_a_file_whose_event_list_ends_just_before_the_documents_end_takes_the_fast_path(
        name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # `...}]}` with nothing after it (msgspec counts its trailing byte one past the first one): these
    # files went to the streaming parser
    path = FIXTURES / name if name.endswith(".gz") else _write(tmp_path, [EVENT] * 3)
    _no_streaming(monkeypatch)
    assert len(load_trace(path)) > 0


@pytest.mark.parametrize("text, error", [
    ('{"traceEvents": [' + "[" * 20000 + "]" * 20000 + "]}", "nesting deeper than 32 levels at byte 47"),
    ('{"traceEvents": [' + json.dumps({**EVENT, "args": {"shapes": [[1, 2]] * 200_000}}) + "]}",
     "an item longer than 1,048,576 bytes starting at byte 17"),
    ("[" + json.dumps({**EVENT, "args": {"shapes": [[1, 2]] * 200_000}}) + "]",  # a bare array: events one level up
     "an item longer than 1,048,576 bytes starting at byte 1"),
    ('{"traceEvents": [' + json.dumps({**EVENT, "name": "x" * (2 << 20)}) + "]}", "longer than 1,048,576 bytes"),
])
def test_the_fast_path_reads_within_the_loaders_bounds(text: str, error: str, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    _no_streaming(monkeypatch)
    path = tmp_path / "hostile.json"
    path.write_text(text)
    with pytest.raises(TraceFormatError, match=error):
        load_trace(path)


def test_the_fast_path_refuses_a_gzip_bomb(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _no_streaming(monkeypatch)
    monkeypatch.setattr(loader, "_MIN_GZIP_ALLOWANCE", 1 << 20)
    body = ('{"traceEvents": [' + (json.dumps(EVENT) + ",") * 20_000 + '{"ph": "M"}]}').encode()
    path = tmp_path / "bomb.json.gz"
    path.write_bytes(gzip.compress(body))
    with pytest.raises(TraceFormatError, match="expands to more than 1,048,576 bytes"):
        load_trace(path)


@pytest.mark.parametrize("odd", [
    {**EVENT, "ts": 1.7e308, "dur": 1.7e308},  # finite, though their sum is not
    {**EVENT, "args": {"stream": None}},  # an explicit null (counted as odd by the streaming parser)
    [1, 2],  # not an event
])
def test_numbers_out_of_range_and_items_that_are_not_events_read_as_the_streaming_parser_reads_them(
        odd: object, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "odd.json"
    path.write_text(json.dumps({"traceEvents": [EVENT, odd, EVENT]}))
    assert_same_trace(*_both(path, monkeypatch))


@pytest.mark.parametrize("odd, fast", [
    ({**EVENT, "dur": -3}, True),  # counted, and read as 0
    ({**EVENT, "dur": -0.0}, True),  # not negative: kept as it is, sign included
    ({**EVENT, "ts": 1.7e308, "dur": 1.7e308}, False),  # beyond 2^53 us: handed over, skipped and counted
    ({key: value for key, value in EVENT.items() if key != "ts"}, False),  # no time: the streaming parser counts it
])
def test_times_read_by_the_fast_path_itself_or_handed_over(odd: dict, fast: bool, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    path = _write(tmp_path, [EVENT, odd, {**EVENT, "dur": -1.5}], traceName="t")
    assert loader._Parse(path, include_python=False).fast() is fast
    quick, slow = _both(path, monkeypatch)
    assert_same_trace(quick, slow)
    assert np.signbit(quick.dur_us).tolist() == np.signbit(slow.dur_us).tolist()


@pytest.mark.parametrize("other, fast", [
    ({"ph": "f", "id": 1, "pid": 1.5, "tid": "x", "ts": "12", "cat": 3, "bp": "e"}, True),  # a flow's fields: unread
    ({"ph": "i", "s": "t", "name": "[memory]", "ts": "11", "pid": 1, "tid": 1,
      "args": {"Total Allocated": 2048, "Total Reserved": 4096, "Device Type": 1, "Device Id": 0}}, True),
    ({"ph": "Q", "name": "x", "ts": 1}, False),  # a phase the Trace Event Format does not define
    ({"name": "no phase", "ts": 1}, False),
])
def test_events_other_than_complete_ones_read_as_the_streaming_parser_reads_them(
        other: dict, fast: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _write(tmp_path, [EVENT, other, EVENT], traceName="t")
    assert loader._Parse(path, include_python=False).fast() is fast
    assert_same_trace(*_both(path, monkeypatch))


@pytest.mark.parametrize("odd", [{**EVENT, "pid": 2**64 - 1},
                                 {**EVENT, "cat": "kernel", "args": {"stream": 2**64 - 1}}])
def test_integers_out_of_int64_are_refused_as_the_streaming_parser_refuses_them(odd: dict, tmp_path: Path) -> None:
    path = tmp_path / "odd.json"
    path.write_text(json.dumps({"traceEvents": [EVENT, odd]}))
    with pytest.raises(TraceFormatError, match="a number out of the 64-bit range"):
        load_trace(path)
