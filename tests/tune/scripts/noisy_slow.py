"""A training loop without a seed (its loss differs run to run) and slow steps (40 ms of sleep),
so that a test can interrupt a tuning session in the middle of a trial."""

import time

import torch
from torch import nn

model = nn.Linear(16, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
for step in range(10_000):
    x = torch.randn(32, 16)
    optimizer.zero_grad()
    loss = ((model(x) - x.sum(1, keepdim=True)) ** 2).mean()
    loss.backward()
    optimizer.step()
    time.sleep(0.04)
