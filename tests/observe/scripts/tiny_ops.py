"""A training loop of many tiny element-wise operators (about 500 a step with the backward and the
optimizer): what the compile probe measures. `python tiny_ops.py [STEPS] [double]`: with `double`,
the backward keeps its graph (`create_graph=True`), as a gradient penalty's does."""

from __future__ import annotations

import sys

import torch
from torch import nn

LINKS = 60


class Chain(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.w = nn.Parameter(torch.ones(16))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for _ in range(LINKS):
            x = torch.tanh(x * self.w + 0.1)
        return x.sum()


if __name__ == "__main__":
    torch.manual_seed(0)
    model = Chain()
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    double = sys.argv[2:] == ["double"]
    for _ in range(int(sys.argv[1]) if len(sys.argv) > 1 else 60):
        loss = model(torch.randn(4, 16))
        optimizer.zero_grad()
        loss.backward(create_graph=double)
        optimizer.step()
