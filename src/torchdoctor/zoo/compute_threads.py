"""Problem: far more intra-op threads than physical cores.

`torch.set_num_threads` is set to four times the machine's cores, so matmul threads preempt each
other. Expected top finding: TD-COMP-009.
"""

from __future__ import annotations

import os

import torch
from torch.utils.data import DataLoader

from torchdoctor.zoo.common import epochs_from_argv, mlp, regression_data, train

if __name__ == "__main__":
    torch.manual_seed(0)
    torch.set_num_threads(4 * (os.cpu_count() or 1))
    loader = DataLoader(regression_data(8192, 256), batch_size=256, shuffle=True)
    model = mlp(256, 512)
    train(model, lambda: loader, torch.optim.Adam(model.parameters()), epochs_from_argv())
