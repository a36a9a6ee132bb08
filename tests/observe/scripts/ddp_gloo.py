"""DDP training with the gloo backend, as launched by torchrun (one process per rank); every rank
does the same work each step. `ddp_gloo.py [FEATURES HIDDEN BATCH]` (default 32 64 16)."""
import os
import sys

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

dist.init_process_group("gloo")
torch.manual_seed(dist.get_rank())
features, hidden, batch = (int(a) for a in sys.argv[1:4]) if len(sys.argv) > 3 else (32, 64, 16)
model = DistributedDataParallel(
    torch.nn.Sequential(torch.nn.Linear(features, hidden), torch.nn.ReLU(), torch.nn.Linear(hidden, 1)))
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
try:
    for step in range(int(os.environ.get("STEPS", "200"))):
        x, y = torch.randn(batch, features), torch.randn(batch, 1)
        optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
finally:
    dist.destroy_process_group()
print("rank", os.environ["RANK"], "done")
