"""Workload for observe_overhead.py: an MLP trained from a DataLoader, timing its own steps.

`python overhead_workload.py WIDTH STEPS OUT.json`: each iteration (batch fetch, forward,
backward, optimizer step) is timed with perf_counter_ns by the script itself, so the same clock
measures the plain run and the observed run.
"""

import atexit
import json
import sys
import time

import torch
from torch.utils.data import DataLoader, TensorDataset

width, steps, out = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
torch.manual_seed(0)
data = TensorDataset(torch.randn(64 * 64, 256), torch.randn(64 * 64, 1))
loader = DataLoader(data, batch_size=64, shuffle=False)
model = torch.nn.Sequential(torch.nn.Linear(256, width), torch.nn.ReLU(), torch.nn.Linear(width, width),
                            torch.nn.ReLU(), torch.nn.Linear(width, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=1e-4)
times_ns = []
atexit.register(lambda: json.dump(times_ns, open(out, "w")))
done = 0
while done < steps:
    last = time.perf_counter_ns()
    for x, y in loader:
        optimizer.zero_grad()
        torch.nn.functional.mse_loss(model(x), y).backward()
        optimizer.step()
        now = time.perf_counter_ns()
        times_ns.append(now - last)
        last = now
        done += 1
        if done >= steps:
            break
