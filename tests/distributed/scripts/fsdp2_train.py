"""FSDP2 (`fully_shard`, gloo on CPU) training of a small MLP: each layer, then the root, sharded."""
import os

import torch
import torch.distributed as dist
from torch.distributed.fsdp import fully_shard

dist.init_process_group("gloo")
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 64), torch.nn.ReLU(),
                            torch.nn.Linear(64, 1))
for layer in (model[0], model[2], model[4]):
    fully_shard(layer)
fully_shard(model)
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
try:
    for step in range(int(os.environ.get("STEPS", "200"))):
        x, y = torch.randn(16, 32), torch.randn(16, 1)
        optimizer.zero_grad()
        torch.nn.functional.mse_loss(model(x), y).backward()
        optimizer.step()
finally:
    dist.destroy_process_group()
