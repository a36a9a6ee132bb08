"""The step's memory over time: MemTracker's points in order, the peak among them, and the snapshot's."""

from __future__ import annotations

import pickle

import torch
import torch.nn as nn

from tests.memory.test_snapshot import snapshot
from torchdoctor.memory.snapshot import analyse_snapshot, snapshot_timeline
from torchdoctor.memory.timeline import thin
from torchdoctor.observe.probes.memory import MemoryWindow


def _measured_step() -> dict:
    model = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 8))
    optimizer = torch.optim.Adam(model.parameters())
    window = MemoryWindow()
    window.begin(model, optimizer)
    model(torch.randn(128, 64)).sum().backward()
    optimizer.step()
    window.end(batch_size=128)
    return window.to_dict()


def _at(timeline: dict, label: str) -> dict[str, int]:
    index = timeline["labels"].index(label)
    return {name: values[index] for name, values in timeline["series"].items()}


def test_the_timeline_follows_the_step_through_forward_backward_and_the_optimizer():
    memory = _measured_step()
    timeline = memory["timeline"]
    assert timeline["source"] == "mem_tracker" and timeline["device"] == "cpu"
    assert all(len(values) == len(timeline["t_s"]) for values in timeline["series"].values())
    assert timeline["t_s"] == sorted(timeline["t_s"])
    labels = timeline["labels"]
    order = ["step start", "Sequential pre-forward", "Sequential.0 post-forward", "Sequential post-forward",
             "Sequential pre-backward", "Sequential post-backward", "optimizer step start",
             "optimizer step end", "step end"]
    assert [labels.index(label) for label in order] == sorted(labels.index(label) for label in order)
    assert list(timeline["series"])[:2] == ["parameters", "gradients"]  # stacking order
    forward_in, forward_out = _at(timeline, "Sequential.0 pre-forward"), _at(timeline, "Sequential.0 post-forward")
    assert forward_out["activations"] - forward_in["activations"] >= 128 * 256 * 4
    assert _at(timeline, "Sequential post-backward")["gradients"] == _at(timeline, "step start")["parameters"]
    adam_state = _at(timeline, "optimizer step end")["optimizer_state"] - 2 * _at(timeline, "step start")["parameters"]
    assert 0 <= adam_state <= 4 * 8  # exp_avg and exp_avg_sq, plus one `step` scalar per parameter


def test_the_peak_of_the_breakdown_is_a_point_of_the_timeline():
    memory = _measured_step()
    timeline, breakdown = memory["timeline"], memory["breakdown"]
    totals = [sum(values[i] for values in timeline["series"].values()) for i in range(len(timeline["t_s"]))]
    assert max(totals) == breakdown["peak_bytes"] == totals[timeline["labels"].index("peak")]


def test_without_mem_tracker_there_is_no_timeline():
    window = MemoryWindow()
    window.tracker.reason = "MemTracker unavailable on torch 1.13"
    window.begin(None, None)
    window.end(batch_size=1)
    assert window.to_dict()["timeline"] is None


def test_thinning_keeps_the_ends_and_the_peak():
    kept = thin(list(range(10_000)), {4321}, 100)
    assert len(kept) <= 102 and {0, 4321, 9999} <= set(kept)
    assert thin([1, 2, 3], set(), 100) == [1, 2, 3]


def test_a_snapshot_replays_into_a_timeline_by_category(tmp_path):
    path = tmp_path / "snap.pickle"
    path.write_bytes(pickle.dumps(snapshot()))
    timeline = snapshot_timeline(path).to_dict()
    assert timeline["source"] == "cuda_snapshot" and timeline["device"] == "cuda:0"
    series = timeline["series"]
    assert series["activations"] == [400, 400, 400, 400, 0]  # the backward's 100 B count as temporaries
    assert series["temporaries"] == [0, 100, 0, 0, 0] and series["optimizer_state"] == [0, 0, 0, 300, 300]
    totals = [sum(v[i] for v in series.values()) for i in range(5)]
    assert max(totals) == analyse_snapshot(path)[0].peak_bytes and timeline["labels"][3] == "peak"
