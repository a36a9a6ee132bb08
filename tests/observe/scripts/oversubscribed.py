"""Trains a small MLP with four intra-op threads per usable core (TD-COMP-009's case); argv[1]: steps."""
import os
import sys

import torch

cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
torch.set_num_threads(4 * cores)
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(128, 256), torch.nn.ReLU(), torch.nn.Linear(256, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
x, y = torch.randn(128, 128), torch.randn(128, 1)
for _ in range(int(sys.argv[1])):
    optimizer.zero_grad()
    torch.nn.functional.mse_loss(model(x), y).backward()
    optimizer.step()
