"""Balanced DDP training with the gloo backend: every rank does the same work each step."""
import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

dist.init_process_group("gloo")
torch.manual_seed(dist.get_rank())
model = DistributedDataParallel(torch.nn.Sequential(torch.nn.Linear(128, 512), torch.nn.ReLU(), torch.nn.Linear(512, 1)))
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
try:
    for step in range(int(os.environ.get("STEPS", "200"))):
        x, y = torch.randn(64, 128), torch.randn(64, 1)
        optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
finally:
    dist.destroy_process_group()
print("rank", os.environ["RANK"], "done")
