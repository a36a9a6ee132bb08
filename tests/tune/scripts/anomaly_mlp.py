"""A training loop of small operators with autograd anomaly detection left on (a debugging
switch that records a stack for every autograd node): the fix is deleting one line."""

import torch
from torch import nn

torch.autograd.set_detect_anomaly(True)
model = nn.Sequential(*[layer for _ in range(6) for layer in (nn.Linear(32, 32), nn.Tanh())], nn.Linear(32, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
for step in range(100_000):
    x = torch.randn(16, 32)
    optimizer.zero_grad()
    loss = ((model(x) - x.sum(1, keepdim=True)) ** 2).mean()
    loss.backward()
    optimizer.step()
