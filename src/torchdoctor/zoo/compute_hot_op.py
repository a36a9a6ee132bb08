"""Problem: one operator dominates the step: a quantile of a large activation buffer, every step.

Logging the 99th percentile of a 4M-value buffer sorts it each step (`torch.quantile`), which costs
far more than the model. Expected top finding: TD-COMP-004.
"""

from __future__ import annotations

import torch
from torch.utils.data import DataLoader

from torchdoctor.zoo.common import epochs_from_argv, mlp, regression_data

if __name__ == "__main__":
    torch.manual_seed(0)
    loader = DataLoader(regression_data(4096, 64), batch_size=64, shuffle=True)
    model = mlp(64, 64)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    activations = torch.randn(1 << 22)
    for _ in range(epochs_from_argv()):
        for x, y in loader:
            optimizer.zero_grad()
            loss = torch.nn.functional.mse_loss(model(x), y)
            loss.backward()
            optimizer.step()
            p99 = torch.quantile(activations, 0.99)  # "monitoring"
