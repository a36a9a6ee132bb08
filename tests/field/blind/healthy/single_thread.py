"""Healthy twin of problems/single_thread.py: the default thread count is kept.

The problem it fixes: Training pinned to one intra-op thread on a multi-core machine.

Thread: "Only one thread is used on macOS (super slow on CPU)",
https://github.com/pytorch/pytorch/issues/7686

Problem: ``torch.set_num_threads(1)`` (left from a multiprocessing
experiment) keeps large matrix multiplications on one core while the others
idle.
Expected fix: remove the call so PyTorch uses one thread per physical core.
"""
import sys
import time

import torch
import torch.nn.functional as F
from torch import nn


def main(steps=60):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(512, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(),
                          nn.Linear(1024, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x_all = torch.randn(4096, 512)
    y_all = torch.randint(0, 10, (4096,))
    times = []
    for step in range(steps):
        t0 = time.perf_counter()
        idx = torch.randint(0, len(x_all), (256,))
        loss = F.cross_entropy(model(x_all[idx]), y_all[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
        times.append(time.perf_counter() - t0)
    t = sorted(times[5:])
    print(f"threads: {torch.get_num_threads()}")
    print(f"median step time: {t[len(t) // 2] * 1e3:.2f} ms over {len(t)} steps")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 60)
