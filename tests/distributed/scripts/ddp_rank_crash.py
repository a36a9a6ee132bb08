"""DDP with gloo where rank CRASH_RANK (default 1) raises at step CRASH_STEP (default 5)."""
import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

dist.init_process_group("gloo")
rank = dist.get_rank()
crash_rank, crash_step = int(os.environ.get("CRASH_RANK", "1")), int(os.environ.get("CRASH_STEP", "5"))
model = DistributedDataParallel(torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1)))
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
for step in range(200):
    if rank == crash_rank and step == crash_step:
        raise RuntimeError(f"injected failure on rank {rank} at step {step}")
    x, y = torch.randn(16, 32), torch.randn(16, 1)
    optimizer.zero_grad()
    torch.nn.functional.mse_loss(model(x), y).backward()
    optimizer.step()
