"""What the zoo workloads share: a command line, synthetic data, and a plain training loop.

Each workload stays a runnable script (`python <workload>.py [--epochs N]`) whose one known problem
is visible in its own file; only the boilerplate lives here.
"""

from __future__ import annotations

import argparse
from typing import Callable, Iterable

import torch
from torch import nn


def epochs_from_argv(default: int = 1000) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=default)
    return parser.parse_args().epochs


def regression_data(samples: int, features: int, seed: int = 0) -> torch.utils.data.TensorDataset:
    """In-memory (x, y) pairs with a learnable linear target."""
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(samples, features, generator=gen)
    y = x @ torch.randn(features, 1, generator=gen) + 0.1 * torch.randn(samples, 1, generator=gen)
    return torch.utils.data.TensorDataset(x, y)


def batched_loader(samples: int, features: int, batch_size: int) -> torch.utils.data.DataLoader:
    """A DataLoader over pre-batched in-memory data (one item = one batch, nothing to collate), for
    workloads whose problem is not in loading."""
    x, y = regression_data(samples, features).tensors
    batches = samples // batch_size
    data = torch.utils.data.TensorDataset(x[: batches * batch_size].view(batches, batch_size, features),
                                          y[: batches * batch_size].view(batches, batch_size, 1))
    return torch.utils.data.DataLoader(data, batch_size=None, shuffle=True)


def mlp(features: int, hidden: int, layers: int = 2) -> nn.Sequential:
    blocks: list[nn.Module] = []
    width = features
    for _ in range(layers):
        blocks += [nn.Linear(width, hidden), nn.ReLU()]
        width = hidden
    return nn.Sequential(*blocks, nn.Linear(width, 1))


def train(model: nn.Module, batches: Callable[[], Iterable], optimizer: torch.optim.Optimizer,
          epochs: int, loss_fn: nn.Module | None = None) -> None:
    """The usual loop: for each epoch, for each (x, y): forward, loss, backward, step."""
    loss_fn = loss_fn or nn.MSELoss()
    for _ in range(epochs):
        for x, y in batches():
            optimizer.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            optimizer.step()
