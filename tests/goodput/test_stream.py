"""The stream's one reader: followed as the file grows or read whole, it builds the same run; a
torn last line waits while the writer may finish it and is tried once the writer is gone; lines
of an unknown shape are skipped."""

from __future__ import annotations

import orjson

from torchdoctor.goodput.stream import StreamFollower, read_watch

LINES = [
    {"start": {"unix_ns": 5_000_000_000, "t_us": 100, "pid": 1, "sample_interval_s": 0.05}},
    {"mark": {"name": "lean_start", "t_us": 1000, "step": 1, "loop": ["/work/train.py", "train"]}},
    {"steps": {"first": 0, "end_us": [2000, 3000, 4000], "data_us": [0, 500, 0]}},
    {"stack": [0, "time:sleep", [["/work/train.py", "save", 12]]]},
    {"samples": [[2, 0], [2, 0]]},
    {"block": {"first": 3, "count": 4, "end_us": 9000, "sum_us": 5000, "median_us": 1000, "max_us": 2000,
               "data_us": 0}, "slow": [[5, 8000, 2000, 0]]},
    {"mem": [7, 9500, 2**20, None]},
    {"profile": {"first": 7, "last": 9, "t_us": 9600, "steps": 1, "clock": "cpu", "total_us": 10,
                 "ops": [["aten::mm", 6]]}},
]


def _bytes(lines: list[dict]) -> bytes:
    return b"".join(orjson.dumps(line) + b"\n" for line in lines)


def test_a_stream_followed_as_it_grows_is_the_stream_read_whole(tmp_path):
    path = tmp_path / "rank0.watch.jsonl"
    data = _bytes(LINES)
    follower = StreamFollower(path)
    for cut in range(0, len(data) + 1, 37):  # written a few bytes at a time, lines torn mid-way
        path.write_bytes(data[:cut])
        follower.read()
    path.write_bytes(data)
    follower.read(final=True)
    whole = read_watch(path)
    assert follower.lines == len(LINES) and follower.run == whole
    assert whole.ends == {0: 0.002, 1: 0.003, 2: 0.004} and whole.slow == {5: (0.008, 0.002, 0.0)}
    assert whole.start_unix_s == 5.0 and [p.ops[0].name for p in whole.profiles] == ["aten::mm"]


def test_a_last_line_without_its_newline_waits_until_the_writer_is_gone(tmp_path):
    path = tmp_path / "rank0.watch.jsonl"
    path.write_bytes(_bytes(LINES[:2]) + orjson.dumps(LINES[2]))
    follower = StreamFollower(path)
    assert follower.read() == 2 and follower.run.ends == {}
    assert follower.read(final=True) == 1 and len(follower.run.ends) == 3


def test_torn_and_unknown_lines_are_skipped_and_an_empty_stream_is_none(tmp_path):
    path = tmp_path / "rank0.watch.jsonl"
    path.write_bytes(b'{"mem": [1, 2]}\n[1, 2]\n{"future": 1}\n' + _bytes(LINES[2:3]) + b'{"steps": {"fi')
    run = read_watch(path)
    assert run is not None and run.ends == {0: 0.002, 1: 0.003, 2: 0.004} and run.memory == []
    path.write_bytes(b'{"mem": [1, 2]}\n')
    assert read_watch(path) is None and read_watch(tmp_path / "missing.jsonl") is None
