"""A step whose time is waiting, not computing: 4 ms to load each batch (a sleep in
`__getitem__`, one per sample) and 6 ms the host waits for the "device" (a sleep after the
optimizer step). One DataLoader worker overlaps the two: about x1.6, whatever the machine's load,
since sleeping needs no core. The device's 6 ms keep the worker clearly ahead: with 4 ms, as at
first, ceil(load / compute) sat on the edge of 1 and 2 workers and one worker only just kept up,
its runs measuring 6.6-10.6 ms on a quiet machine (tests/tune/test_confirmed.py)."""

import time

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset


class SlowStorage(Dataset):
    def __len__(self) -> int:
        return 1_000_000

    def __getitem__(self, index: int) -> tuple[torch.Tensor, torch.Tensor]:
        time.sleep(0.001)
        x = torch.full((16,), float(index % 13) / 13)
        return x, x.sum(0, keepdim=True)


model = nn.Linear(16, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
for x, y in DataLoader(SlowStorage(), batch_size=4):
    optimizer.zero_grad()
    loss = ((model(x) - y) ** 2).mean()
    loss.backward()
    optimizer.step()
    time.sleep(0.006)  # the device's share of the step
