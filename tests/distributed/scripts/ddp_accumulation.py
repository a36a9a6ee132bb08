"""DDP (gloo, find_unused_parameters=True) accumulating ACCUM micro-batches per optimizer step;
with --no-sync the first ACCUM-1 backwards run inside `no_sync()`."""
import contextlib
import os
import sys

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

dist.init_process_group("gloo")
accum, no_sync = int(os.environ.get("ACCUM", "4")), "--no-sync" in sys.argv
model = DistributedDataParallel(torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1)),
                                find_unused_parameters=True)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
try:
    for step in range(200):
        optimizer.zero_grad()
        for micro in range(accum):
            skip_sync = no_sync and micro < accum - 1
            with model.no_sync() if skip_sync else contextlib.nullcontext():
                x, y = torch.randn(16, 32), torch.randn(16, 1)
                (torch.nn.functional.mse_loss(model(x), y) / accum).backward()
        optimizer.step()
finally:
    dist.destroy_process_group()
