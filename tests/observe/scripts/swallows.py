"""Wraps its loop in `except Exception` and a `finally`, as many scripts do."""
import torch

model = torch.nn.Linear(4, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
try:
    for step in range(1000):
        optimizer.zero_grad()
        model(torch.randn(2, 4)).sum().backward()
        optimizer.step()
except Exception as exc:
    print("swallowed", exc)
finally:
    print("finally ran", flush=True)
