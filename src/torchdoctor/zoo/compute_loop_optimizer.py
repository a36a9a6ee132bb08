"""Problem: an optimizer updating hundreds of small parameter tensors one at a time.

A model with 400 per-feature scale vectors and Adam with `foreach=False`: the per-tensor loop's
overhead dwarfs the model's arithmetic. Expected top finding: TD-COMP-012.
"""

from __future__ import annotations

import torch
from torch import nn

from torchdoctor.zoo.common import batched_loader, epochs_from_argv, train

GROUPS, WIDTH = 400, 16


class ScaledFeatures(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.scales = nn.ParameterList(nn.Parameter(torch.ones(WIDTH)) for _ in range(GROUPS))
        self.head = nn.Linear(GROUPS * WIDTH, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(x * torch.cat(list(self.scales)))


if __name__ == "__main__":
    torch.manual_seed(0)
    loader = batched_loader(2048, GROUPS * WIDTH, 64)
    model = ScaledFeatures()
    train(model, lambda: loader, torch.optim.Adam(model.parameters(), foreach=False), epochs_from_argv())
