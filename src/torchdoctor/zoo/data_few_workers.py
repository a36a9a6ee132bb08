"""Problem: one DataLoader worker for a dataset whose samples take milliseconds of Python to build.

Each sample is parsed from a text record in Python (~1 ms); a batch of 32 takes far longer than
the model's step, and one worker cannot keep up. Expected top finding: TD-DATA-003.
"""

from __future__ import annotations

import os

import torch
from torch.utils.data import DataLoader, Dataset

from torchdoctor.zoo.common import epochs_from_argv, mlp, train

FEATURES = 64


class ParsedRecords(Dataset):
    def __len__(self) -> int:
        return 1 << 16

    def __getitem__(self, index: int) -> tuple[torch.Tensor, torch.Tensor]:
        line = ",".join(str((index * 31 + i) % 997 / 997) for i in range(4000))  # the "file" record
        values = [float(v) for v in line.split(",")]
        x = torch.tensor(values[:FEATURES])
        return x, x.sum(0, keepdim=True)


if __name__ == "__main__":
    torch.manual_seed(0)
    torch.set_num_threads(max(1, (os.cpu_count() or 2) - 1))  # leave a core to the worker
    loader = DataLoader(ParsedRecords(), batch_size=32, shuffle=True, num_workers=1, persistent_workers=True)
    model = mlp(FEATURES, 64)
    train(model, lambda: loader, torch.optim.Adam(model.parameters()), epochs_from_argv())
