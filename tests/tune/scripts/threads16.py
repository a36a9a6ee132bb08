"""A training loop that hard-codes 16 intra-op threads (the fix: one line, to the machine's
cores or fewer).

Whether real oversubscription hurts depends on what else runs on the machine (on a busy shared
machine, more threads can even win a larger share of the cores), so its cost is emulated here:
each thread beyond the first makes the step wait 1 ms, as a barrier waiting for descheduled
threads would. The step's real work stays a small model's."""

import time

import torch
from torch import nn

torch.set_num_threads(16)
model = nn.Sequential(nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=0.001)
for step in range(100_000):
    x = torch.randn(16, 32)
    optimizer.zero_grad()
    loss = ((model(x) - x.mean(1, keepdim=True)) ** 2).mean()
    loss.backward()
    optimizer.step()
    time.sleep(0.001 * (torch.get_num_threads() - 1))  # the emulated cost of oversubscription
