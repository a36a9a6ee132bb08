"""A tiny training loop whose trace carries a hostile annotation name, for the HTML report tests."""

import torch
from torch.profiler import record_function

HOSTILE = "</script><img src=x onerror=alert(1)>"

model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 4))
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
x, y = torch.randn(64, 32), torch.randint(0, 4, (64,))
for _ in range(200):
    with record_function(HOSTILE):
        loss = torch.nn.functional.cross_entropy(model(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
