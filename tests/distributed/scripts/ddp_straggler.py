"""DDP with gloo where one rank (STRAGGLER_RANK, default 1) sleeps before each step: the first
argument's seconds, else SLEEP_S's, else 0.05."""
import os
import sys
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

dist.init_process_group("gloo")
rank = dist.get_rank()
sleep_s = float(sys.argv[1] if len(sys.argv) > 1 else os.environ.get("SLEEP_S", "0.05"))
if rank != int(os.environ.get("STRAGGLER_RANK", "1")):
    sleep_s = 0.0
model = DistributedDataParallel(torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1)))
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
try:
    for step in range(200):
        time.sleep(sleep_s)
        x, y = torch.randn(16, 32), torch.randn(16, 1)
        optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
finally:
    dist.destroy_process_group()
