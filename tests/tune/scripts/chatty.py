"""A tiny training loop that prints every step, on stdout and stderr, and breaks under DataLoader workers."""

import sys

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset, get_worker_info


class OnlyInProcess(Dataset):
    def __len__(self) -> int:
        return 2048

    def __getitem__(self, index: int) -> tuple[torch.Tensor, torch.Tensor]:
        if get_worker_info() is not None:
            raise RuntimeError("CHATTY-FAILURE this dataset cannot run in a worker process")
        return torch.full((8,), float(index % 7)), torch.tensor(float(index % 3))


torch.manual_seed(0)
model = nn.Linear(8, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
for step, (x, y) in enumerate(DataLoader(OnlyInProcess(), batch_size=16)):
    optimizer.zero_grad()
    loss = ((model(x).squeeze(1) - y) ** 2).mean()
    loss.backward()
    optimizer.step()
    print(f"CHATTY-STDOUT step {step} loss {loss.item():.4f}", flush=True)
    print(f"CHATTY-STDERR step {step}", file=sys.stderr, flush=True)
