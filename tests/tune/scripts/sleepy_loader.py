"""A step whose time is waiting, not computing: 4 ms to load each batch (a sleep in
`__getitem__`, one per batch of 4 samples: a block read from storage) and 8 ms the host waits for
the "device" (a sleep after the optimizer step). One DataLoader worker overlaps the two: about
x1.3, whatever the machine's load, since sleeping needs no core.

Why one sleep a batch and 8 ms: with a 1 ms sleep per sample and 6 ms for the device, one worker
measured no faster than none (or slower) in 5 of 12 tune trials, six runs of the test below on the
development VM: their steps waited 5-14 ms for data where 1.5-2 ms is usual, about 13 ms a batch for
the worker, as if each of its four wake-ups cost 2-3 ms. With one sleep a batch and 8 ms for the
device, three runs of the test kept the worker at x1.26-x1.33 on both sides.
With 4 ms for the device, ceil(load / compute) sat on the edge of 1 and 2 workers
(tests/tune/test_confirmed.py)."""

import time

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

BATCH = 4


class SlowStorage(Dataset):
    def __len__(self) -> int:
        return 1_000_000

    def __getitem__(self, index: int) -> tuple[torch.Tensor, torch.Tensor]:
        if index % BATCH == 0:
            time.sleep(0.004)  # the block holding this batch's samples
        x = torch.full((16,), float(index % 13) / 13)
        return x, x.sum(0, keepdim=True)


model = nn.Linear(16, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
for x, y in DataLoader(SlowStorage(), batch_size=BATCH):
    optimizer.zero_grad()
    loss = ((model(x) - y) ** 2).mean()
    loss.backward()
    optimizer.step()
    time.sleep(0.008)  # the device's share of the step
