"""Tiny models for the inference tests, loaded by the code under test as `module:function`."""

from __future__ import annotations

import torch


class TinyClassifier(torch.nn.Module):
    """Embedding bag over token ids, then an MLP: the demo model's shape in miniature."""

    def __init__(self, vocab: int = 100, dim: int = 32, classes: int = 4) -> None:
        super().__init__()
        self.embed = torch.nn.Embedding(vocab, dim)
        self.mlp = torch.nn.Sequential(torch.nn.Linear(dim, 64), torch.nn.ReLU(), torch.nn.Linear(64, classes))

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.mlp(self.embed(tokens).mean(dim=1))


def classifier() -> tuple[torch.nn.Module, torch.Tensor]:
    torch.manual_seed(0)
    return TinyClassifier(), torch.randint(0, 100, (4, 8))


class Unexportable(torch.nn.Module):
    """Control flow on tensor values: torch.export cannot trace it."""

    def __init__(self) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(8, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.sum() > 0:
            return self.linear(x)
        return -self.linear(x)


def unexportable() -> tuple[torch.nn.Module, torch.Tensor]:
    torch.manual_seed(0)
    return Unexportable(), torch.rand(4, 8)


def wrong_example() -> tuple[torch.nn.Module, torch.Tensor]:
    """The example has 5 features; the model wants 8."""
    return torch.nn.Linear(8, 2), torch.rand(4, 5)
