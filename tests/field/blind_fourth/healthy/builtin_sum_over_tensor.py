"""Healthy twin of problems/builtin_sum_over_tensor.py: the losses are reduced
with ``losses.mean()``.

The problem it fixes: A batch loss reduced with Python's built-in ``sum()``
over a tensor.
"""
import sys
import time

import torch
import torch.nn.functional as F
from torch import nn

STEPS = 80


def main(steps=STEPS):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    times = []
    for _ in range(steps):
        t0 = time.perf_counter()
        x = torch.randn(512, 32)
        y = torch.randint(0, 10, (512,))
        losses = F.cross_entropy(model(x), y, reduction="none")
        loss = losses.mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        times.append(time.perf_counter() - t0)

    t = sorted(times[5:])
    print(f"median step time: {t[len(t) // 2] * 1e3:.2f} ms over {len(t)} steps")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else STEPS)
