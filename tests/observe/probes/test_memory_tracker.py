"""StepMemoryTracker: MemTracker's categories for one real training step, phase, modules."""

from __future__ import annotations

import torch
import torch.nn as nn

from torchdoctor.observe.probes.memory_tracker import StepMemoryTracker, mem_tracker_support


def _mlp_step(accumulate: int = 1):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 64))
    optimizer = torch.optim.Adam(model.parameters())

    def step() -> None:
        optimizer.zero_grad(set_to_none=True)
        for _ in range(accumulate):
            model(torch.randn(32, 64)).square().mean().backward()
        optimizer.step()

    step()  # optimizer state exists from here on, as in a real loop
    return model, optimizer, step


def _param_bytes(model: nn.Module) -> int:
    return sum(p.numel() * p.element_size() for p in model.parameters())


def test_mem_tracker_is_supported_on_this_torch():
    assert mem_tracker_support() is None


def test_a_training_step_is_broken_into_categories_phase_and_modules():
    model, optimizer, step = _mlp_step()
    tracker = StepMemoryTracker()
    assert tracker.start(model, optimizer)
    step()
    b = tracker.stop()
    assert b.method == "mem_tracker" and b.device == "cpu"
    assert b.categories_bytes["parameters"] == _param_bytes(model)
    # Adam keeps exp_avg and exp_avg_sq per parameter (plus a scalar step each).
    assert b.categories_bytes["optimizer_state"] >= 2 * _param_bytes(model)
    assert b.peak_bytes == sum(b.categories_bytes.values())
    assert b.phase in ("forward", "backward", "optimizer")
    assert [m.name for m in b.modules] == ["Sequential.0", "Sequential.1", "Sequential.2"]
    assert b.modules[0].parameter_bytes == (64 * 256 + 256) * 4
    assert b.modules[0].output_bytes == 32 * 256 * 4


def test_a_second_forward_of_the_root_in_one_step_is_tracked_not_refused():
    model, optimizer, step = _mlp_step(accumulate=2)  # gradient accumulation
    tracker = StepMemoryTracker()
    tracker.start(model, optimizer)
    step()
    b = tracker.stop()
    assert b.reason is None
    assert len(b.modules) == 3
    assert b.modules[0].output_bytes == 32 * 256 * 4


def test_stopping_mid_step_keeps_the_figures_tracked_so_far():
    model, optimizer, _ = _mlp_step()
    tracker = StepMemoryTracker()
    tracker.start(model, optimizer)
    kept = model(torch.randn(32, 64))  # forward only: the step never finished
    b = tracker.stop("the step ran out of memory")
    assert b.reason == "the step ran out of memory"
    assert b.categories_bytes["activations"] >= kept.numel() * kept.element_size()
    assert b.phase == "forward"


def test_two_forwards_then_one_backward_are_tracked_without_breaking_the_backward():
    model, optimizer, _ = _mlp_step()
    tracker = StepMemoryTracker()
    tracker.start(model, optimizer)
    first, second = model(torch.randn(32, 64)), model(torch.randn(32, 64))
    (first - second).square().mean().backward()  # the first forward's modules were reset
    optimizer.step()
    b = tracker.stop()
    assert b.categories_bytes["gradients"] == _param_bytes(model)
    assert b.modules[0].output_bytes == 32 * 256 * 4
