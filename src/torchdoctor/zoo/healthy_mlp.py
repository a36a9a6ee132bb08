"""Healthy: an MLP regression trained from an in-memory TensorDataset.

Known problem: none. Data is already in tensors, the matmuls are large enough to dominate each
step, and the optimizer holds few tensors. Expected: no finding of severity warning or above.
"""

from __future__ import annotations

import torch
from torch.utils.data import DataLoader

from torchdoctor.zoo.common import epochs_from_argv, mlp, regression_data, train

if __name__ == "__main__":
    torch.manual_seed(0)
    loader = DataLoader(regression_data(8192, 256), batch_size=256, shuffle=True)
    model = mlp(256, 512)
    train(model, lambda: loader, torch.optim.Adam(model.parameters(), lr=1e-3), epochs_from_argv())
