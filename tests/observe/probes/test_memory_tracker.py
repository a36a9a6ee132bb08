"""StepMemoryTracker: MemTracker's categories for one real training step, phase, modules."""

from __future__ import annotations

import pytest
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


def _backward_peak_step(device: str, other_device: str | None):
    """A step whose peak is in the backward (large activations, small weights); the optimizer step
    creates a tensor on `other_device` as AdamW does for CUDA parameters (its step counters live on
    the CPU)."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 2048), nn.ReLU(), nn.Linear(2048, 64)).to(device)
    optimizer = torch.optim.AdamW(model.parameters())
    x = torch.randn(1024, 64, device=device)
    kept = []
    if other_device is not None:
        optimizer.register_step_pre_hook(lambda *_: kept.append(torch.empty(4096, device=other_device)))

    def step() -> None:
        optimizer.zero_grad(set_to_none=True)
        model(x).square().mean().backward()
        optimizer.step()

    step()
    return model, optimizer, step


def _peak_and_optimizer_points(tracker: StepMemoryTracker) -> tuple[int, int]:
    labels = tracker.timeline.labels
    return labels.index("peak"), labels.index("optimizer step start")


def test_a_tensor_on_another_device_in_the_optimizer_step_does_not_move_the_peak_phase():
    # Seen on an H200 (docs/gpu.md): AdamW's CPU step counters gave the CPU a new peak inside the
    # optimizer step, which relabelled the GPU's backward peak "optimizer" and moved it on the timeline.
    # Here the model is on the CPU and the other device is "meta" (counted by MemTracker, no memory).
    model, optimizer, step = _backward_peak_step("cpu", "meta")
    tracker = StepMemoryTracker()
    tracker.start(model, optimizer)
    step()
    b = tracker.stop()
    assert b.device == "cpu"  # meta tensors hold no memory: never the breakdown's device
    assert b.phase == "backward"
    peak, optimizer_start = _peak_and_optimizer_points(tracker)
    assert peak < optimizer_start


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA (the CPU reproduction is the test above)")
def test_on_cuda_the_peak_of_an_adamw_step_is_placed_in_its_backward():
    model, optimizer, step = _backward_peak_step("cuda", None)
    tracker = StepMemoryTracker()
    tracker.start(model, optimizer)
    step()
    b = tracker.stop()
    assert b.device.startswith("cuda") and b.phase == "backward"
    peak, optimizer_start = _peak_and_optimizer_points(tracker)
    assert peak < optimizer_start


def test_a_frozen_copy_of_the_model_called_in_the_step_is_tracked_without_hooking_its_gradients():
    """A snapshot made with `copy.deepcopy(model).requires_grad_(False)` and called in the step:
    its parameters take no gradient hook (torch refuses one on a tensor that requires no grad)."""
    import copy

    model, optimizer, _ = _mlp_step()
    snapshot = copy.deepcopy(model).requires_grad_(False)
    tracker = StepMemoryTracker()
    tracker.start(model, optimizer)
    x = torch.randn(32, 64)
    optimizer.zero_grad(set_to_none=True)
    (model(x) - snapshot(x)).square().mean().backward()
    optimizer.step()
    b = tracker.stop()
    assert b.reason is None and b.categories_bytes["gradients"] > 0
