"""Trains slowly forever, so it can be interrupted; prints READY once steps run."""
import time

import torch

model = torch.nn.Linear(4, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
step = 0
while True:
    optimizer.zero_grad()
    model(torch.randn(2, 4)).sum().backward()
    optimizer.step()
    step += 1
    if step == 4:
        print("READY", flush=True)
    time.sleep(0.02)
