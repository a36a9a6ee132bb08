"""Problem: far more intra-op threads than physical cores.

`torch.set_num_threads` is set to four times the machine's cores, so matmul threads preempt each
other. Expected top finding: TD-COMP-009.
"""

from __future__ import annotations

import os

import torch

from torchdoctor.zoo.common import batched_loader, epochs_from_argv, mlp, train

if __name__ == "__main__":
    torch.manual_seed(0)
    torch.set_num_threads(4 * (os.cpu_count() or 1))
    loader = batched_loader(8192, 256, 256)
    model = mlp(256, 512)
    train(model, lambda: loader, torch.optim.Adam(model.parameters()), epochs_from_argv())
