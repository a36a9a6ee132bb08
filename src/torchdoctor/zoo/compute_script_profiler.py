"""Problem: the script keeps its own torch.profiler running over the whole training run.

Every operator call is recorded (here with shapes), slowing every step. Expected top finding:
TD-COMP-016.
"""

from __future__ import annotations

import torch

from torchdoctor.zoo.common import batched_loader, epochs_from_argv, mlp, train

if __name__ == "__main__":
    torch.manual_seed(0)
    loader = batched_loader(8192, 64, 128)
    model = mlp(64, 256, layers=6)
    with torch.autograd.profiler.profile(record_shapes=True):
        train(model, lambda: loader, torch.optim.Adam(model.parameters()), epochs_from_argv())
