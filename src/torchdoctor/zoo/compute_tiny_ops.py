"""Problem: a recurrent cell written as many tiny element-wise operators, unrolled in Python.

A hand-written GRU-like cell on a tiny hidden state runs dozens of operators per time step; each
costs more in dispatch than in arithmetic. Expected top finding: TD-COMP-003.
"""

from __future__ import annotations

import torch
from torch import nn

from torchdoctor.zoo.common import epochs_from_argv, train

HIDDEN, STEPS = 8, 48


class TinyCell(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.w = nn.Parameter(torch.randn(HIDDEN) * 0.1)
        self.u = nn.Parameter(torch.randn(HIDDEN) * 0.1)
        self.head = nn.Linear(HIDDEN, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.zeros(x.shape[0], HIDDEN)
        for t in range(x.shape[1]):
            z = torch.sigmoid(x[:, t, None] * self.w + h * self.u)
            h = (1 - z) * h + z * torch.tanh(x[:, t, None] - h)
        return self.head(h)


def batches():
    for _ in range(64):
        x = torch.randn(4, STEPS)
        yield x, x.mean(1, keepdim=True)


if __name__ == "__main__":
    torch.manual_seed(0)
    model = TinyCell()
    train(model, batches, torch.optim.SGD(model.parameters(), lr=0.01), epochs_from_argv())
