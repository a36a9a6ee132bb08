"""A training loop that also calls a `zero_grad()` of its own, which takes no argument: an edit
setting `set_to_none=True` on every `zero_grad` call breaks that one."""

import torch


class Meter:
    def __init__(self):
        self.total = 0.0

    def zero_grad(self):
        self.total = 0.0


model = torch.nn.Linear(4, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
meter = Meter()
for step in range(40):
    optimizer.zero_grad()
    meter.zero_grad()
    loss = model(torch.randn(8, 4)).pow(2).mean()
    loss.backward()
    optimizer.step()
