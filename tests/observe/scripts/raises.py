"""Raises a ValueError after a few steps, from a helper function."""
import torch

model = torch.nn.Linear(4, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)


def check(step):
    if step == 12:
        raise ValueError(f"bad batch at step {step}")


for step in range(100):
    check(step)
    optimizer.zero_grad()
    model(torch.randn(2, 4)).sum().backward()
    optimizer.step()
