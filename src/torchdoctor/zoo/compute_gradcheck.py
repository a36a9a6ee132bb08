"""Problem: torch.autograd.gradcheck left in the training loop.

gradcheck re-runs the function with finite differences in float64 for every input element; it
belongs in a unit test. Expected top finding: TD-COMP-017.
"""

from __future__ import annotations

import torch

from torchdoctor.zoo.common import batched_loader, epochs_from_argv, mlp


def scaled_tanh(x: torch.Tensor) -> torch.Tensor:
    return 2.0 * torch.tanh(x / 2.0)


if __name__ == "__main__":
    torch.manual_seed(0)
    loader = batched_loader(4096, 64, 64)
    model = mlp(64, 64)
    optimizer = torch.optim.Adam(model.parameters())
    probe = torch.randn(14, 14, dtype=torch.double, requires_grad=True)
    for _ in range(epochs_from_argv()):
        for x, y in loader:
            torch.autograd.gradcheck(scaled_tanh, (probe,))  # a debugging check, every step
            optimizer.zero_grad()
            torch.nn.functional.mse_loss(scaled_tanh(model(x)), y).backward()
            optimizer.step()
