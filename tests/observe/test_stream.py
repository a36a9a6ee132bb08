"""The step stream: what a rank wrote as it went is read back whole, whatever cut it short."""

from __future__ import annotations

from torchdoctor.observe.stream import StepStream, read_stream


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
