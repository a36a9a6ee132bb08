"""The live view's state, read from a stream as it grows: steps and their rate, the running
median, the goodput so far, the epoch and its end, the samples a second, the last badput event
named by the samples in it; a torn line waits for the next read."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from torchdoctor.goodput.live import LiveState

SCRIPT = "/work/train.py"


def _append(path: Path, *lines: dict, torn: bytes = b"") -> None:
    with path.open("ab") as f:
        f.write(b"".join(orjson.dumps(line) + b"\n" for line in lines) + torn)


def _steps(first: int, ends_ms: list[float]) -> dict:
    return {"steps": {"first": first, "end_us": [int(t * 1000) for t in ends_ms], "data_us": [0] * len(ends_ms)}}


def test_the_view_follows_the_steps_their_rate_the_epoch_and_the_goodput(tmp_path):
    path = tmp_path / "rank0.watch.jsonl"
    state = LiveState(path)
    _append(path, {"mark": {"name": "lean_start", "t_us": 0, "step": 0, "loop": [SCRIPT, "train"], "batch_size": 32}},
            {"mark": {"name": "epoch", "t_us": 0, "step": 0, "length": 100}},
            _steps(0, [10.0 * (i + 1) for i in range(40)]), {"mem": [40, 400_000, 2**30, None]})
    state.read()
    first = state.view(1.0)
    assert first.steps == 40 and first.steps_per_s is None  # a rate needs two views
    assert first.step_s == pytest.approx(0.010) and first.memory_bytes == 2**30
    assert first.epoch == 1 and first.epoch_step == 40 and first.epoch_length == 100
    assert first.epoch_eta_s == pytest.approx(60 * 0.010)
    assert first.goodput_fraction == pytest.approx(39 * 0.010 / 1.0)
    _append(path, _steps(40, [410.0 + 10.0 * i for i in range(20)]))
    state.read()
    second = state.view(2.0)
    assert second.steps_per_s == pytest.approx(20.0) and second.samples_per_s == pytest.approx(640.0)
    assert second.last_badput is None


def test_the_last_slow_step_is_named_by_the_samples_in_it(tmp_path):
    path = tmp_path / "rank0.watch.jsonl"
    state = LiveState(path)
    ends = [10.0 * (i + 1) for i in range(30)] + [300.0 + 250.0] + [560.0 + 10.0 * i for i in range(5)]
    _append(path, {"mark": {"name": "lean_start", "t_us": 0, "step": 0, "loop": [SCRIPT, "train"]}},
            {"stack": [0, "time:sleep", [[SCRIPT, "save_checkpoint", 12], [SCRIPT, "train", 40]]]},
            _steps(0, ends), {"samples": [[30, 0], [30, 0]]})
    state.read()
    assert state.view(1.0).last_badput == "step 30: save_checkpoint (train.py:12), 250 ms"


def test_a_torn_line_is_read_once_it_is_whole(tmp_path):
    path = tmp_path / "rank0.watch.jsonl"
    state = LiveState(path)
    line = orjson.dumps({"mem": [5, 1000, 2**20, None]}) + b"\n"
    _append(path, _steps(0, [1.0, 2.0]), torn=line[:7])
    state.read()
    assert state.view(1.0).memory_bytes is None
    with path.open("ab") as f:
        f.write(line[7:])
    state.read()
    assert state.view(2.0).memory_bytes == 2**20


def test_a_profiler_window_is_the_last_badput_event(tmp_path):
    path = tmp_path / "rank0.watch.jsonl"
    state = LiveState(path)
    _append(path, _steps(0, [1.0, 2.0, 3.0]), {"profile": {"first": 3, "last": 9, "t_us": 3000, "steps": 5,
                                                             "clock": "cpu", "total_us": 10.0, "ops": []}})
    state.read()
    assert state.view(1.0).last_badput == "step 3: torchdoctor's periodic profiler window"
