"""Snapshot analysis: replay of the allocation history, sites, categories, and bad files."""

from __future__ import annotations

import pickle

import pytest

from torchdoctor.memory.snapshot import SnapshotFormatError, analyse_snapshot

USER = {"filename": "/home/me/train.py", "line": 12, "name": "forward"}
OPTIM = {"filename": "/venv/site-packages/torch/optim/adam.py", "line": 90, "name": "step"}
BACKWARD = {"filename": "/venv/site-packages/torch/_tensor.py", "line": 600, "name": "backward"}


def snapshot() -> dict:
    trace = [
        {"action": "alloc", "addr": 1, "size": 400, "frames": [USER]},
        {"action": "alloc", "addr": 2, "size": 100, "frames": [BACKWARD, USER]},
        {"action": "free_completed", "addr": 2, "size": 100},
        {"action": "alloc", "addr": 3, "size": 300, "frames": [OPTIM]},  # peak: 400 + 300
        {"action": "free_completed", "addr": 1, "size": 400},
    ]
    blocks = [{"size": 1000, "state": "active_allocated"}, {"size": 300, "state": "active_allocated"},
              {"size": 500, "state": "inactive"}]
    return {"segments": [{"device": 0, "blocks": blocks}], "device_traces": [trace]}


def write(tmp_path, data) -> str:
    path = tmp_path / "snap.pickle"
    path.write_bytes(pickle.dumps(data))
    return str(path)


def test_the_peak_is_replayed_from_the_history_on_top_of_the_baseline(tmp_path):
    (summary,) = analyse_snapshot(write(tmp_path, snapshot()))
    assert summary.baseline_bytes == 1300 - 300  # active at the end minus the trace's net change
    assert summary.peak_bytes == 1000 + 700
    assert summary.categories_bytes == {"before_recording": 1000, "activations": 400, "optimizer_state": 300}
    assert summary.sites[0] == {"site": "/home/me/train.py:12 in forward", "bytes": 400, "count": 1}


def test_a_truncated_snapshot_is_reported_not_crashed_on(tmp_path):
    path = tmp_path / "snap.pickle"
    path.write_bytes(pickle.dumps(snapshot())[:50])
    with pytest.raises(SnapshotFormatError, match="truncated or another format"):
        analyse_snapshot(path)


def test_a_pickle_with_code_is_refused(tmp_path):
    with pytest.raises(SnapshotFormatError, match="refusing to load"):
        analyse_snapshot(write(tmp_path, {"segments": [], "x": pytest.approx}))


def test_a_snapshot_without_history_says_how_to_record_one(tmp_path):
    with pytest.raises(SnapshotFormatError, match="no allocation history"):
        analyse_snapshot(write(tmp_path, {"segments": [], "device_traces": [[]]}))
