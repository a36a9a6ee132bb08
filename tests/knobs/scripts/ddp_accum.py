"""DDP on gloo accumulating 4 micro-batches per optimizer step, every backward all-reducing
(no `no_sync()`), with DDP's default constructor options."""
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

dist.init_process_group("gloo")
torch.manual_seed(0)
model = DistributedDataParallel(torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1)))
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
try:
    for step in range(200):
        optimizer.zero_grad()
        for micro in range(4):
            x, y = torch.randn(16, 32), torch.randn(16, 1)
            (torch.nn.functional.mse_loss(model(x), y) / 4).backward()
        optimizer.step()
finally:
    dist.destroy_process_group()
