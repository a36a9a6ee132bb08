"""A small model on a loop of mid-sized operators that hard-codes 16 intra-op threads: on a
machine with fewer cores the threads preempt each other (the fix: one line, to 1 thread)."""

import torch
from torch import nn

torch.set_num_threads(16)
model = nn.Sequential(nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=0.001)
for step in range(100_000):
    x = torch.randn(256, 256)
    optimizer.zero_grad()
    loss = ((model(x) - x.mean(1, keepdim=True)) ** 2).mean()
    loss.backward()
    optimizer.step()
