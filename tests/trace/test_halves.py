"""A large plain trace read in two processes (trace/halves.py) gives exactly what one process gives,
hands every file it cannot read exactly back to one process, and never leaves its child behind."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import pytest

from torchdoctor.errors import TraceFormatError, TraceLoadError
from torchdoctor.trace import halves, load_trace, loader
from tests.trace.same import assert_same_trace

pytest.importorskip("msgspec")

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "cuda-2.11.0-resnet18-dataloader0.json.gz"
EVENT = {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 10, "dur": 5,
         "args": {"External id": 3}}


@pytest.fixture
def split_small(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Every plain file is split; the list collects whether each two-process reading stood."""
    monkeypatch.setattr(halves, "MIN_BYTES", 0)
    monkeypatch.setattr(halves, "enabled", lambda: True)
    outcomes: list[bool] = []
    in_halves = loader._Parse.in_halves

    def spy(self: loader._Parse) -> bool:
        outcomes.append(in_halves(self))
        return outcomes[-1]

    monkeypatch.setattr(loader._Parse, "in_halves", spy)
    return outcomes


def _serial(path: Path, monkeypatch: pytest.MonkeyPatch):
    with monkeypatch.context() as m:
        m.setenv("TORCHDOCTOR_TRACE_PARSER", "serial")
        return load_trace(path)


def _plain(tmp_path: Path, text: bytes) -> Path:
    path = tmp_path / "t.json"
    path.write_bytes(text)
    return path


def _events(n: int, **fields: object) -> list[dict]:
    return [{**EVENT, "ts": 10 * i, **fields} for i in range(n)]


def test_a_real_trace_read_in_two_processes_gives_the_columns_of_one(split_small, tmp_path, monkeypatch):
    path = _plain(tmp_path, gzip.decompress(FIXTURE.read_bytes()))
    two = load_trace(path)
    assert split_small == [True]
    assert_same_trace(two, _serial(path, monkeypatch))


def test_a_truncated_file_falls_back_to_one_process_and_says_so(split_small, tmp_path, monkeypatch):
    text = gzip.decompress(FIXTURE.read_bytes())
    path = _plain(tmp_path, text[: len(text) * 3 // 4])
    two = load_trace(path)
    assert split_small == [False]
    assert two.truncated
    assert_same_trace(two, _serial(path, monkeypatch))


@pytest.mark.parametrize("where", ["inside a string", "inside an event's args"])
def test_a_cut_that_is_not_between_two_events_falls_back(where, split_small, tmp_path, monkeypatch):
    odd = {**EVENT, "name": "x}, {"} if where == "inside a string" else {**EVENT, "args": {"s": [{"a": 1}, {"b": 2}]}}
    events = _events(30_000)
    events[15_000] = odd
    path = _plain(tmp_path, json.dumps({"traceEvents": events}).encode())
    text = path.read_bytes()
    fake = text.index(b'{"', text.index(b"x}, {" if where == "inside a string" else b'{"b"') - 2)
    monkeypatch.setattr(halves, "split_point", lambda _: fake)
    two = load_trace(path)
    assert split_small == [False]
    assert_same_trace(two, _serial(path, monkeypatch))


def test_labels_that_would_number_differently_fall_back(split_small, tmp_path, monkeypatch):
    events = _events(15_000, tid="first") + _events(15_000, tid="second")
    events[-1]["tid"] = "first"
    path = _plain(tmp_path, json.dumps({"traceEvents": events}).encode())
    two = load_trace(path)
    assert split_small == [False]
    assert_same_trace(two, _serial(path, monkeypatch))


def test_a_bound_broken_in_the_second_half_is_refused_as_one_process_refuses_it(split_small, tmp_path):
    events = _events(30_000)
    events[20_000] = {**EVENT, "args": {"deep": json.loads("[" * 40 + "]" * 40)}}
    path = _plain(tmp_path, json.dumps({"traceEvents": events}).encode())
    with pytest.raises(TraceFormatError, match=r"nesting deeper than 32 levels at byte [\d,]+"):
        load_trace(path)
    assert split_small == [False]


@pytest.mark.parametrize("child, error", [
    ("import sys; sys.stderr.write('boom\\n'); sys.exit(3)", r"failed \(exit status 3\): boom; TORCHDOCTOR_TRACE_PARSER"),
    ("import os, signal; os.kill(os.getpid(), signal.SIGKILL)", r"failed \(killed by signal 9\)"),
])
def test_a_child_that_fails_is_a_clear_error(child, error, split_small, tmp_path, monkeypatch):
    monkeypatch.setattr(halves, "_CHILD", child)
    path = _plain(tmp_path, gzip.decompress(FIXTURE.read_bytes()))
    with pytest.raises(TraceLoadError, match=rf"{re.escape(str(path))}: the process reading its second half \(from byte [\d,]+\) {error}"):
        load_trace(path)


def test_the_child_is_killed_when_the_loader_stops_early(split_small, tmp_path, monkeypatch):
    children: list[halves.Child] = []
    start = halves.Child.start

    def spy(*args: object) -> halves.Child | None:
        children.append(start(*args))
        return children[-1]

    def interrupted(self: loader._Parse, start: int = 0, stop: int | None = None) -> bool:
        raise KeyboardInterrupt

    monkeypatch.setattr(halves.Child, "start", spy)
    monkeypatch.setattr(loader._Parse, "fast", interrupted)
    path = _plain(tmp_path, gzip.decompress(FIXTURE.read_bytes()))
    with pytest.raises(KeyboardInterrupt):
        load_trace(path)
    assert len(children) == 1 and children[0].proc.returncode is not None


def test_small_and_gzip_files_are_read_in_one_process(tmp_path, monkeypatch):
    small = _plain(tmp_path, json.dumps({"traceEvents": _events(10)}).encode())
    assert halves.split_point(small) is None
    monkeypatch.setattr(halves, "MIN_BYTES", 0)
    assert halves.split_point(small) is not None
    assert halves.split_point(FIXTURE) is None  # a gzip stream cannot be entered in its middle


def test_a_file_asked_to_stay_in_one_process_is_never_split(split_small, tmp_path):
    path = _plain(tmp_path, json.dumps({"traceEvents": _events(50)}).encode())
    assert_same_trace(load_trace(path, split=False), load_trace(path))
    assert len(split_small) == 1  # only the second reading tried two processes
