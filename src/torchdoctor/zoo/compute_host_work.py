"""Problem: per-step host work outside the model: every weight is logged as JSON after each step.

Converting all parameters to Python lists and serialising them every step costs far more than the
training step itself. Expected top finding: TD-COMP-013.
"""

from __future__ import annotations

import io
import json

import torch
from torch.utils.data import DataLoader

from torchdoctor.zoo.common import epochs_from_argv, mlp, regression_data

if __name__ == "__main__":
    torch.manual_seed(0)
    loader = DataLoader(regression_data(4096, 128), batch_size=64, shuffle=True)
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
