"""Problem: per-step host work outside the model: every weight is logged as JSON after each step.

Converting all parameters to Python lists and serialising them every step costs far more than the
training step itself. Expected top finding: TD-COMP-013.
"""

from __future__ import annotations

import io
import json

import torch

from torchdoctor.zoo.common import batched_loader, epochs_from_argv, mlp

if __name__ == "__main__":
    torch.manual_seed(0)
    loader = batched_loader(4096, 128, 64)
    model = mlp(128, 128)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    log = io.StringIO()
    for _ in range(epochs_from_argv()):
        for x, y in loader:
            optimizer.zero_grad()
            torch.nn.functional.mse_loss(model(x), y).backward()
            optimizer.step()
            log.write(json.dumps({n: p.detach().tolist() for n, p in model.named_parameters()}))
            log.seek(0)
