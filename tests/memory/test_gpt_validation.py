"""Validation: activation checkpointing on a GPT-style model, measured.

The PyTorch memory tutorial reports, for GPT-2 on a GPU, activations falling from 2.93 GiB to
873 MiB with checkpointing. Here the same model family at CPU scale must show the activation
share of the step's peak falling by at least half, and the what-if estimates must agree with
the measurements they predict.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch

from tests.memory.scripts.gpt import GPT, GPTConfig, training_step
from torchdoctor.memory import BatchScaling, MemoryBreakdown
from torchdoctor.observe.probes.memory_tracker import StepMemoryTracker
from torchdoctor.memory.whatif import autocast_peak, checkpointing_peak

CONFIG = GPTConfig(block_size=128)


def measure(batch_size: int, checkpoint: bool, autocast: bool = False) -> MemoryBreakdown:
    torch.manual_seed(0)
    model = GPT(CONFIG, checkpoint_blocks=checkpoint)
    optimizer = torch.optim.AdamW(model.parameters())
    plain_step = training_step(model, optimizer, batch_size)

    def step() -> None:
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
            plain_step()

    step()
    tracker = StepMemoryTracker()
    tracker.start(model, optimizer)
    step()
    return replace(tracker.stop(), batch_size=batch_size)


@pytest.fixture(scope="module")
def runs() -> dict[tuple[int, bool], MemoryBreakdown]:
    return {(b, c): measure(b, c) for b, c in ((4, False), (4, True), (8, False))}


def test_checkpointing_halves_the_activation_share_of_the_peak(runs):
    plain, ckpt = runs[4, False], runs[4, True]
    assert plain.share("activations") > 0.5  # activations dominate, as in the tutorial
    assert ckpt.share("activations") <= plain.share("activations") / 2
    assert ckpt.peak_bytes < plain.peak_bytes


def test_checkpointing_estimate_is_within_a_fifth_of_the_measured_peak(runs):
    estimate = checkpointing_peak(runs[4, False])
    assert estimate == pytest.approx(runs[4, True].peak_bytes, rel=0.2)


def test_autocast_estimate_is_within_a_fifth_of_the_measured_peak(runs):
    assert autocast_peak(runs[4, False]) == pytest.approx(measure(4, False, autocast=True).peak_bytes, rel=0.2)


def test_activations_grow_linearly_with_the_batch(runs):
    small, large = runs[4, False], runs[8, False]
    assert large.activations_bytes == pytest.approx(2 * small.activations_bytes, rel=0.05)
    fitted, single = BatchScaling.fit(small, large), BatchScaling.from_one(small)
    assert single.per_sample_bytes == pytest.approx(fitted.per_sample_bytes, rel=0.1)
    assert fitted.peak_at(16) == pytest.approx(2 * large.peak_bytes - fitted.fixed_bytes, rel=0.01)
