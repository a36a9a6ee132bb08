"""Knobs acting on the outermost module at its first forward, and global switches."""

from __future__ import annotations

import torch
from torch import nn

from torchdoctor.knobs import apply_knobs
from torchdoctor.knobs.checkpointing import repeated_blocks


def _model() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 2))


def test_autocast_bf16_runs_the_model_in_bfloat16_from_the_second_call_and_is_undone() -> None:
    model, x = _model(), torch.randn(4, 8)
    undo = apply_knobs({"autocast_bf16": True})
    try:
        assert model(x).dtype == torch.float32  # the first call found the model
        assert model(x).dtype == torch.bfloat16
    finally:
        undo()
    assert model(x).dtype == torch.float32
    assert "forward" not in vars(model)


def test_compile_wraps_the_forward_and_keeps_the_result() -> None:
    model, x = _model(), torch.randn(4, 8)
    expected = model(x)
    undo = apply_knobs({"compile": {"mode": "default", "backend": "eager"}})
    try:
        model(x)
        assert hasattr(model.forward, "_torchdynamo_orig_callable") or "forward" in vars(model)
        torch.testing.assert_close(model(x), expected)
    finally:
        undo()
    assert "forward" not in vars(model)


def test_inference_mode_knob_returns_inference_tensors() -> None:
    model, x = _model(), torch.randn(4, 8)
    undo = apply_knobs({"inference_mode": True})
    try:
        model(x)
        assert model(x).is_inference()
    finally:
        undo()


def test_activation_checkpointing_finds_repeated_blocks_and_keeps_gradients() -> None:
    blocks = nn.ModuleList([nn.Linear(8, 8) for _ in range(3)])

    class Net(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.blocks = blocks

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            for block in self.blocks:
                x = torch.relu(block(x))
            return x.sum()

    net, x = Net(), torch.randn(4, 8)
    assert repeated_blocks(net) == list(blocks)
    net(x).backward()
    expected = blocks[0].weight.grad.clone()
    net.zero_grad()
    undo = apply_knobs({"activation_checkpointing": True})
    try:
        net(x)  # first call: the knob finds the model
        net.zero_grad()
        net(x).backward()
        assert "forward" in vars(blocks[0])
        torch.testing.assert_close(blocks[0].weight.grad, expected)
    finally:
        undo()
    assert "forward" not in vars(blocks[0])


def test_threads_zero_grad_and_optimizer_knobs_are_applied_and_undone() -> None:
    before = torch.get_num_threads()
    model = _model()
    undo = apply_knobs({"threads": 1, "zero_grad_set_to_none": True, "optimizer_impl": "foreach"})
    try:
        assert torch.get_num_threads() == 1
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        assert optimizer.defaults["foreach"] is True
        model(torch.randn(2, 8)).sum().backward()
        optimizer.zero_grad(set_to_none=False)
        assert all(p.grad is None for p in model.parameters())
    finally:
        undo()
    assert torch.get_num_threads() == before
    assert torch.optim.SGD(model.parameters(), lr=0.1).defaults["foreach"] is None


def test_no_anomaly_detection_ignores_the_scripts_switch() -> None:
    undo = apply_knobs({"no_anomaly_detection": True})
    try:
        torch.autograd.set_detect_anomaly(True)
        with torch.autograd.detect_anomaly():
            assert not torch.is_anomaly_enabled()
        assert not torch.is_anomaly_enabled()
    finally:
        undo()
    torch.autograd.set_detect_anomaly(False)
