"""A small training loop that hangs when its DataLoader gets worker processes and crashes hard
(SIGABRT) when zero_grad stops zeroing gradients in place; fine with every other knob."""

import os
import time

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset, get_worker_info


class HangsInWorkers(Dataset):
    def __len__(self) -> int:
        return 4096

    def __getitem__(self, index: int) -> tuple[torch.Tensor, torch.Tensor]:
        if get_worker_info() is not None:
            time.sleep(3600)
        return torch.full((8,), float(index % 7)), torch.tensor(float(index % 3))


torch.manual_seed(0)
model = nn.Linear(8, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
for step, (x, y) in enumerate(DataLoader(HangsInWorkers(), batch_size=16, shuffle=True)):
    optimizer.zero_grad(set_to_none=False)
    if step > 0 and model.weight.grad is None:  # after the first step, zeroed grads must exist
        os.abort()
    loss = ((model(x).squeeze(1) - y) ** 2).mean()
    loss.backward()
    optimizer.step()
