"""Problem: samples come from slow storage and are read one at a time in the training process.

Each read waits 15 ms (a network file system; simulated with a sleep), so the process is idle while
the step waits for data. Expected top finding: TD-DATA-007.
"""

from __future__ import annotations

import time

import torch
from torch.utils.data import DataLoader, Dataset

from torchdoctor.zoo.common import epochs_from_argv, mlp, train

READ_LATENCY_S = 0.015


class RemoteSamples(Dataset):
    def __len__(self) -> int:
        return 1 << 16

    def __getitem__(self, index: int) -> tuple[torch.Tensor, torch.Tensor]:
        time.sleep(READ_LATENCY_S)  # the storage round trip
        x = torch.full((32,), index % 7 / 7)
        return x, x[:1]


if __name__ == "__main__":
    torch.manual_seed(0)
    loader = DataLoader(RemoteSamples(), batch_size=8, shuffle=True)
    model = mlp(32, 32)
    train(model, lambda: loader, torch.optim.SGD(model.parameters(), lr=0.01), epochs_from_argv())
