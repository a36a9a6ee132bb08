"""Leaves after a given number of steps by sys.exit(code) or os._exit(code): exits.py STEPS HOW CODE."""
import os
import sys

import torch

steps, how, code = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
model = torch.nn.Linear(4, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(steps):
    optimizer.zero_grad()
    model(torch.randn(2, 4)).sum().backward()
    optimizer.step()
print(f"leaving after {steps} steps", flush=True)
print("to stderr", file=sys.stderr, flush=True)
if how == "sys":
    sys.exit(code)
if how == "os":
    os._exit(code)
