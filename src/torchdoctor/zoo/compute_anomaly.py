"""Problem: autograd anomaly detection left on in a training run.

`torch.autograd.set_detect_anomaly(True)` (a debugging aid) records a stack for every autograd node
and checks every gradient. Expected top finding: TD-COMP-007.
"""

from __future__ import annotations

import torch

from torchdoctor.zoo.common import batched_loader, epochs_from_argv, mlp, train

if __name__ == "__main__":
    torch.manual_seed(0)
    torch.autograd.set_detect_anomaly(True)
    loader = batched_loader(4096, 128, 128)
    model = mlp(128, 256, layers=4)
    train(model, lambda: loader, torch.optim.Adam(model.parameters()), epochs_from_argv())
