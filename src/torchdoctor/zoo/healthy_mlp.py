"""Healthy: an MLP regression trained from an in-memory TensorDataset.

Known problem: none. Data is already in tensors, the matmuls are large enough to dominate each
step, and the optimizer holds few tensors. Expected: no finding of severity warning or above.
"""

from __future__ import annotations

import torch

from torchdoctor.zoo.common import batched_loader, epochs_from_argv, mlp, train

if __name__ == "__main__":
    torch.manual_seed(0)
    loader = batched_loader(8192, 256, 256)
    model = mlp(256, 512)
    train(model, lambda: loader, torch.optim.Adam(model.parameters(), lr=1e-3), epochs_from_argv())
