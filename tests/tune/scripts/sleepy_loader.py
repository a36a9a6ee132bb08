"""A step whose time is waiting, not computing: 4 ms to load each batch (a sleep in
`__getitem__`, one per sample) and 4 ms the host waits for the "device" (a sleep after the
optimizer step). One DataLoader worker overlaps the two: about x2, whatever the machine's load,
since sleeping needs no core."""

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
    time.sleep(0.004)  # the device's share of the step
