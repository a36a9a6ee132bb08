"""Workload for observe_overhead.py: an MLP trained from a DataLoader, timing its own steps.

`python overhead_workload.py WIDTH STEPS OUT.json`: each iteration (batch fetch, forward,
backward, optimizer step) is timed by the script itself, in wall time (perf_counter_ns) and in
the main thread's CPU time (thread_time_ns, which other processes on a busy machine do not
inflate), so the same clocks measure the plain run and the observed run.
"""

import atexit
import json
import sys
import time

import torch
from torch.utils.data import DataLoader, TensorDataset

width, steps, out = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
# One intra-op thread: on a shared machine, OpenMP threads spinning at barriers make small steps
# swing by orders of magnitude, which would drown the hooks' cost we want to see.
torch.set_num_threads(1)
torch.manual_seed(0)
data = TensorDataset(torch.randn(64 * 64, 256), torch.randn(64 * 64, 1))
loader = DataLoader(data, batch_size=64, shuffle=False)
model = torch.nn.Sequential(torch.nn.Linear(256, width), torch.nn.ReLU(), torch.nn.Linear(width, width),
                            torch.nn.ReLU(), torch.nn.Linear(width, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=1e-4)
times_ns: dict[str, list[int]] = {"wall": [], "cpu": []}
atexit.register(lambda: json.dump(times_ns, open(out, "w")))
done = 0
while done < steps:
    last, last_cpu = time.perf_counter_ns(), time.thread_time_ns()
    for x, y in loader:
        optimizer.zero_grad()
        torch.nn.functional.mse_loss(model(x), y).backward()
        optimizer.step()
        now, now_cpu = time.perf_counter_ns(), time.thread_time_ns()
        times_ns["wall"].append(now - last)
        times_ns["cpu"].append(now_cpu - last_cpu)
        last, last_cpu = now, now_cpu
        done += 1
        if done >= steps:
            break
