"""Problem: DataLoader workers are re-created at every (short) epoch and each pays a slow set-up.

`worker_init_fn` stands for per-worker set-up such as opening a database or loading a vocabulary
(1 s here); epochs are 4 batches long and persistent_workers is off, so every epoch waits for it.
Expected top finding: TD-DATA-004.
"""

from __future__ import annotations

import os
import time

import torch
from torch.utils.data import DataLoader

from torchdoctor.zoo.common import epochs_from_argv, mlp, regression_data, train

SETUP_S = 1.0


def open_resources(worker_id: int) -> None:
    time.sleep(SETUP_S)  # stands for connecting to storage / loading a vocabulary


if __name__ == "__main__":
    torch.manual_seed(0)
    torch.set_num_threads(max(1, (os.cpu_count() or 2) - 1))  # leave a core to the worker
    loader = DataLoader(regression_data(4 * 64, 64), batch_size=64, shuffle=True, num_workers=1,
                        worker_init_fn=open_resources)
    model = mlp(64, 128)
    train(model, lambda: loader, torch.optim.Adam(model.parameters()), epochs_from_argv())
