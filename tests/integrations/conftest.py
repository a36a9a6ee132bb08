"""In-process integration runs: short windows, no profiler or memory step (the CLI tests cover
those), the report rendered into a buffer and nothing stored, one intra-op thread (as
tests.field.helpers.ENV gives the subprocesses)."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
import torch
from rich.console import Console

from torchdoctor.observe.config import ObserveConfig
from torchdoctor.workflow.diagnose import DiagnoseOutputs

WARMUP_STEPS, TIMING_STEPS = 2, 5


@pytest.fixture(autouse=True)
def one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture
def observe_config() -> ObserveConfig:
    return ObserveConfig(warmup_steps=WARMUP_STEPS, timing_steps=TIMING_STEPS, profile=False, memory=False)


@pytest.fixture
def outputs(tmp_path: Path) -> DiagnoseOutputs:
    return DiagnoseOutputs(store_path=tmp_path / "runs.db", save=False, console=Console(file=io.StringIO()))
