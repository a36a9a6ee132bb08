"""oversubscribed.py's MLP fed by a DataLoader with two workers that only slice a tensor (idle
workers, TD-COMP-009's fix then keeps one thread a core); argv[1]: steps."""
import os
import sys

import torch
from torch.utils.data import DataLoader, TensorDataset

cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
torch.set_num_threads(4 * cores)
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(128, 256), torch.nn.ReLU(), torch.nn.Linear(256, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
steps = int(sys.argv[1])
data = TensorDataset(torch.randn(128 * steps, 128), torch.randn(128 * steps, 1))
for x, y in DataLoader(data, batch_size=128, num_workers=2):
    optimizer.zero_grad()
    torch.nn.functional.mse_loss(model(x), y).backward()
    optimizer.step()
