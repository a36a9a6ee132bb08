"""Hostile memory snapshots: every malformed file ends in SnapshotFormatError, in memory
and time that grow with the file, never faster."""

from __future__ import annotations

import pickle
import random
import resource
import time

import pytest

from tests.hostile import peak_rss
from torchdoctor.memory.snapshot import SnapshotFormatError, analyse_snapshot, snapshot_timeline
from torchdoctor.memory.snapshot_format import scan

USER = {"filename": "/home/me/train.py", "line": 12, "name": "forward"}
OPTIM = {"filename": "/venv/site-packages/torch/optim/adam.py", "line": 90, "name": "step"}


def snapshot(events: int = 20) -> dict:
    trace = [{"action": "alloc", "addr": i, "size": 100 + i, "frames": [USER, OPTIM][: 1 + i % 2], "time_us": i}
             for i in range(events)]  # fmt: skip
    trace += [{"action": "free_completed", "addr": i, "size": 100 + i} for i in range(0, events, 3)]
    return {"segments": [{"device": 0, "blocks": [{"size": 10_000, "state": "active_allocated"}]}],
            "device_traces": [trace]}


def _write(tmp_path, data: bytes):
    path = tmp_path / "snap.pickle"
    path.write_bytes(data)
    return path


def test_a_nine_byte_memo_bomb_is_refused_before_the_unpickler_allocates(tmp_path):
    path = _write(tmp_path, bytes.fromhex("80024e72ffffff0f2e"))  # PROTO 2, NONE, LONG_BINPUT 2**28-1, STOP
    code = ("import sys\nfrom torchdoctor.memory.snapshot import SnapshotFormatError, analyse_snapshot\n"
            "try:\n    analyse_snapshot(sys.argv[1])\nexcept SnapshotFormatError as exc:\n    print(exc)\n")
    run = peak_rss.run([code, str(path)], timeout_s=60)  # an unbounded unpickler took 4 GB (docs/reliability.md)
    assert "LONG_BINPUT at byte 3 stores into memo slot 268,435,455" in run.output
    assert run.peak_mb < 100


def test_a_pickle_that_would_run_code_is_refused_by_opcode(tmp_path):
    data = b"\x80\x04\x8c\x02os\x94\x8c\x06system\x94\x93\x94\x8c\x02id\x94\x85\x94R\x94."
    with pytest.raises(SnapshotFormatError, match="refusing to load a pickle that runs code \\(STACK_GLOBAL at byte 16\\)"):
        analyse_snapshot(_write(tmp_path, data))


@pytest.mark.parametrize("protocol", [0, 2, 4, 5])
def test_real_pickles_of_every_protocol_pass_the_scan(protocol):
    scan(pickle.dumps(snapshot(300), protocol=protocol))


@pytest.mark.parametrize(
    ("change", "message"),
    [(lambda d: d["segments"][0]["blocks"][0].update(size="big"), "blocks\\[0\\].size is 'big'"),
     (lambda d: d["segments"][0]["blocks"][0].update(size=-1), "size is negative"),
     (lambda d: d["device_traces"][0][0].update(addr=None), "device_traces\\[0\\]\\[0\\].addr"),
     (lambda d: d["device_traces"][0][1].update(frames="x"), "frames is not a list"),
     (lambda d: d["device_traces"][0][1].update(frames=[{"filename": [[["deep"]]]}]), "frames holds a frame"),
     (lambda d: d["device_traces"][0][0].update(size=10**40), "an integer out of range"),
     (lambda d: d["device_traces"].append(d["device_traces"][0]), "same object as an earlier part"),
     (lambda d: d.update(device_traces={"0": []}), "no allocation history")],
)  # fmt: skip
def test_a_snapshot_of_the_wrong_shape_names_the_part(tmp_path, change, message):
    data = snapshot()
    change(data)
    with pytest.raises(SnapshotFormatError, match=message):
        analyse_snapshot(_write(tmp_path, pickle.dumps(data)))


def test_shared_stacks_are_read_once_so_a_small_file_cannot_ask_for_quadratic_work(tmp_path):
    frames = [dict(USER, line=i) for i in range(20_000)]  # one 20,000-frame stack ...
    trace = [{"action": "alloc", "addr": i, "size": 1, "frames": frames} for i in range(20_000)]  # ... in every event
    path = _write(tmp_path, pickle.dumps({"segments": [], "device_traces": [trace]}))
    start = time.process_time()
    (summary,) = analyse_snapshot(path)
    snapshot_timeline(path)
    assert summary.peak_bytes == 20_000
    assert time.process_time() - start < 10  # 4e8 frame visits if each event walked its stack


def test_a_trace_that_only_grows_is_replayed_in_linear_time(tmp_path):
    trace = [{"action": "alloc", "addr": i, "size": 1, "frames": []} for i in range(100_000)]  # a new peak every event
    start = time.process_time()
    (summary,) = analyse_snapshot(_write(tmp_path, pickle.dumps({"segments": [], "device_traces": [trace]})))
    assert summary.peak_bytes == 100_000 and time.process_time() - start < 10


def test_three_hundred_mutated_snapshots_each_end_in_an_analysis_or_a_snapshot_format_error(tmp_path):
    rng = random.Random(16)
    seeds = [pickle.dumps(snapshot(), protocol=p) for p in (0, 2, 4, 5)]
    outcomes = {"analysed": 0, "refused": 0}
    for _ in range(300):
        data = bytearray(rng.choice(seeds))
        for _ in range(rng.randint(1, 4)):
            at = rng.randrange(len(data))
            what = rng.random()
            if what < 0.5:
                data[at] = rng.randrange(256)
            elif what < 0.7:
                data[at:at] = rng.randbytes(rng.randint(1, 9))
            elif what < 0.85:
                del data[at : at + rng.randint(1, 9)]
            else:
                del data[at:]
        path = _write(tmp_path, bytes(data))
        try:
            analyse_snapshot(path)
            snapshot_timeline(path)
            outcomes["analysed"] += 1
        except SnapshotFormatError:
            outcomes["refused"] += 1
    assert outcomes["analysed"] > 0 and outcomes["refused"] > 200
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss < 2 * 2**20  # KiB: the whole test process, 2 GiB
