"""MemoryWindow: the observation's memory step, its fallback and its early end."""

from __future__ import annotations

import torch
import torch.nn as nn

from torchdoctor.observe.probes.memory import MemoryWindow


def _model_and_optimizer():
    model = nn.Linear(128, 128)
    return model, torch.optim.SGD(model.parameters(), lr=0.1)


def test_a_measured_step_gives_the_breakdown_and_estimates():
    model, optimizer = _model_and_optimizer()
    window = MemoryWindow(budget_bytes=2**30)
    assert window.begin(model, optimizer)
    model(torch.randn(16, 128)).sum().backward()
    optimizer.step()
    window.end(batch_size=16)
    data = window.to_dict()
    assert data["breakdown"]["method"] == "mem_tracker" and data["breakdown"]["batch_size"] == 16
    assert data["what_if"]["largest_batch_in_budget"] > 16
    assert not window.begin(model, optimizer)  # one step only


def test_without_mem_tracker_it_falls_back_to_totals_and_says_why():
    model, optimizer = _model_and_optimizer()
    window = MemoryWindow()
    window.tracker.reason = "MemTracker unavailable on torch 1.13 (no module named mem_tracker)"
    window.begin(model, optimizer)
    model(torch.randn(16, 128)).sum().backward()
    window.end(batch_size=16)
    b = window.to_dict()["breakdown"]
    assert b["method"] == "rss" and b["peak_bytes"] > 0 and b["categories_bytes"] == {}
    assert "MemTracker unavailable on torch 1.13" in b["reason"]
    assert window.to_dict()["what_if"] is None


def test_a_step_cut_short_reports_the_last_known_figures():
    model, optimizer = _model_and_optimizer()
    window = MemoryWindow()
    window.begin(model, optimizer)
    model(torch.randn(64, 128))  # then, say, an out-of-memory error ends the script
    window.close("the measured step did not finish (the script ended: script_error)")
    b = window.to_dict()["breakdown"]
    assert b["categories_bytes"]["activations"] >= 64 * 128 * 4
    assert "did not finish" in b["reason"]


def test_a_window_never_begun_reports_nothing():
    window = MemoryWindow()
    window.close("the script ended")
    assert window.to_dict() is None
