"""Problem: one operator dominates the step: a percentile over a long activation history.

The model keeps a history of 1M activation values and logs their 99th percentile in every forward
(`torch.quantile` sorts the whole history), which costs far more than the model itself.
Expected top finding: TD-COMP-004.
"""

from __future__ import annotations

import torch
from torch import nn

from torchdoctor.zoo.common import batched_loader, epochs_from_argv, mlp, train

HISTORY = 1 << 20


class MonitoredMLP(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.body = mlp(64, 64)
        self.register_buffer("history", torch.randn(HISTORY))
        self.cursor = 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.body(x)
        values = out.detach().flatten()
        self.history[self.cursor : self.cursor + values.numel()] = values
        self.cursor = (self.cursor + values.numel()) % (HISTORY - values.numel())
        self.p99 = torch.quantile(self.history, 0.99)  # the "monitoring"
        return out


if __name__ == "__main__":
    torch.manual_seed(0)
    loader = batched_loader(4096, 64, 64)
    model = MonitoredMLP()
    train(model, lambda: loader, torch.optim.SGD(model.parameters(), lr=0.01), epochs_from_argv())
