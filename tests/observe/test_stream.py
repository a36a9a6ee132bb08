"""The step stream: what a rank wrote as it went is read back whole, whatever cut it short."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import torchdoctor.observe.stream as stream_module
from torchdoctor.observe.stream import BATCH_LINES, BATCH_S, StepStream, read_stream

SRC = str(Path(stream_module.__file__).parents[2])


def _step(index: int) -> dict:
    return {"index": index, "wall_s": 0.1, "data_wait_s": 0.0, "data_wait_cpu_s": 0.0, "forward_s": 0.02,
            "backward_s": 0.03, "optimizer_s": 0.01, "batch_size": 8, "loss": None}


def test_steps_and_the_windows_losses_are_read_back(tmp_path):
    stream = StepStream(tmp_path / "rank0.steps.jsonl")
    stream.tick("optimizer", 2)
    for index in range(3):
        stream.step(_step(index), "optimizer", index + 3)
    stream.window_end(0.31, [1.5, 1.25, 1.0])
    stream.tick("optimizer", 6)
    stream.close()
    read = read_stream(tmp_path / "rank0.steps.jsonl")
    assert read["step_detection"] == "optimizer" and read["steps_seen"] == 6 and read["window_s"] == 0.31
    assert [s["loss"] for s in read["steps"]] == [1.5, 1.25, 1.0] and len(read["steps"]) == 3


def test_a_torn_last_line_is_skipped_and_steps_before_the_window_end_keep_no_loss(tmp_path):
    path = tmp_path / "rank0.steps.jsonl"
    stream = StepStream(path)
    stream.step(_step(0), "backward", 3)
    stream.step(_step(1), "backward", 4)
    stream.close()
    with path.open("ab") as handle:
        handle.write(b'{"step": {"index": 2, "wall')  # killed mid-write
    read = read_stream(path)
    assert [s["index"] for s in read["steps"]] == [0, 1] and read["steps"][0]["loss"] is None


def test_a_better_step_source_restarts_the_steps(tmp_path):
    stream = StepStream(tmp_path / "s.jsonl")
    stream.step(_step(0), "forward", 3)
    stream.tick("marker", 1)  # torchdoctor.step() appeared: counting restarts
    stream.step(_step(0), "marker", 3)
    stream.close()
    read = read_stream(tmp_path / "s.jsonl")
    assert read["step_detection"] == "marker" and len(read["steps"]) == 1


def test_nothing_streamed_is_none_and_an_unwritable_stream_never_raises(tmp_path):
    assert read_stream(tmp_path / "missing.jsonl") is None
    (tmp_path / "empty.jsonl").write_bytes(b"")
    assert read_stream(tmp_path / "empty.jsonl") is None
    broken = StepStream(tmp_path / "no" / "such" / "folder.jsonl")
    broken.step(_step(0), "optimizer", 3)  # a full disk must not fail the script
    broken.close()


def test_lines_wait_in_a_batch_and_close_writes_them(tmp_path):
    path = tmp_path / "rank0.steps.jsonl"
    stream = StepStream(path)
    stream.step(_step(0), "optimizer", 3)
    stream.step(_step(1), "optimizer", 4)
    assert not path.exists()  # no system call a step: the lines wait
    stream.close()
    assert [s["index"] for s in read_stream(path)["steps"]] == [0, 1]


def test_a_full_batch_and_an_old_line_are_written_without_waiting_for_close(tmp_path, monkeypatch):
    path = tmp_path / "rank0.steps.jsonl"
    stream = StepStream(path)
    for index in range(BATCH_LINES):
        stream.step(_step(index), "optimizer", index + 3)
    assert len(read_stream(path)["steps"]) == BATCH_LINES
    stream.tick("optimizer", 100)
    clock = time.perf_counter_ns() + int(BATCH_S * 1e9)
    monkeypatch.setattr(stream_module.time, "perf_counter_ns", lambda: clock)
    stream.tick("optimizer", 101)  # the line before it waited BATCH_S: both are written
    assert read_stream(path)["steps_seen"] == 101


@pytest.mark.slow
def test_a_process_killed_without_warning_keeps_the_window_it_completed(tmp_path):
    """SIGKILL leaves no time to write what waits: the window's end was written at once, so the
    timed steps and their losses survive; the ticks after it, still waiting, are lost."""
    path = tmp_path / "rank0.steps.jsonl"
    script = (
        "import os, signal, sys\n"
        "from torchdoctor.observe.stream import StepStream\n"
        "stream = StepStream(sys.argv[1])\n"
        "for i in range(3):\n"
        "    stream.step({'index': i, 'wall_s': 0.1, 'loss': None}, 'optimizer', i + 3)\n"
        "stream.window_end(0.3, [1.5, 1.25, 1.0])\n"
        "stream.tick('optimizer', 6)\n"
        "os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    ended = subprocess.run([sys.executable, "-c", script, str(path)], env={**os.environ, "PYTHONPATH": SRC})
    assert ended.returncode == -signal.SIGKILL
    read = read_stream(path)
    assert [s["loss"] for s in read["steps"]] == [1.5, 1.25, 1.0] and read["window_s"] == 0.3
    assert read["steps_seen"] == 5
