"""Trace fixtures: CPU traces recorded here with torch.profiler, and helpers to derive variants."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any, Callable

import pytest


def _record(path: Path, *, steps: bool, activation: type | None = None) -> Path:
    import torch
    from torch.profiler import ProfilerActivity, profile, schedule

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(32, 16), (activation or torch.nn.ReLU)(), torch.nn.Linear(16, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    data = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.randn(64, 32), torch.randn(64, 1)), batch_size=8)
    sched = schedule(wait=0, warmup=1, active=4, repeat=1) if steps else None
    with profile(activities=[ProfilerActivity.CPU], schedule=sched) as prof:
        for x, y in data:
            with torch.profiler.record_function("## forward ##"):
                loss = torch.nn.functional.mse_loss(model(x), y)
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
            if steps:
                prof.step()
    prof.export_chrome_trace(str(path))
    # torch's own per-operator figures, for checking ours: name -> [count, self CPU time in us].
    averages = {e.key: [e.count, e.self_cpu_time_total] for e in prof.key_averages()}
    path.with_suffix(".key_averages.json").write_text(json.dumps(averages))
    return path


@pytest.fixture(scope="session")
def cpu_trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A CPU-only training trace with 4 ProfilerSteps (a tiny MLP, DataLoader, SGD)."""
    return _record(tmp_path_factory.mktemp("cpu") / "train.json", steps=True)


@pytest.fixture(scope="session")
def cpu_trace_tanh(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The same loop with Tanh instead of ReLU: a known operator change for diffs."""
    import torch

    return _record(tmp_path_factory.mktemp("cpu") / "train_tanh.json", steps=True, activation=torch.nn.Tanh)


@pytest.fixture(scope="session")
def cpu_trace_no_steps(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _record(tmp_path_factory.mktemp("cpu") / "nosteps.json", steps=False)


@pytest.fixture
def derive(tmp_path: Path) -> Callable[..., Path]:
    """derive(src, edit, name): a copy of a (gzipped) trace with `edit(doc)` applied, in tmp_path."""

    def make(src: Path, edit: Callable[[dict[str, Any]], None], name: str = "derived.json.gz") -> Path:
        opener = gzip.open if src.suffix == ".gz" else open
        with opener(src, "rt") as f:
            doc = json.load(f)
        edit(doc)
        out = tmp_path / name
        with gzip.open(out, "wt") as f:
            json.dump(doc, f)
        return out

    return make
