"""Inputs clipped at a percentile computed with ``torch.quantile`` every batch.

Thread: "torch::quantile performance?",
https://github.com/pytorch/pytorch/issues/85147

Problem: each batch (512 x 1024 values) is clipped at its 99th percentile of
absolute values, ``torch.quantile(x.abs().flatten(), 0.99)``; ``quantile``
sorts all 524,288 values (and builds an index tensor) to read one order
statistic, every step.
Expected fix: select the one order statistic with ``torch.kthvalue`` (or
estimate the percentile on a subsample, or once for the dataset).
"""
import sys
import time

import torch
import torch.nn.functional as F
from torch import nn

STEPS = 60


def main(steps=STEPS):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(1024, 64), nn.ReLU(), nn.Linear(64, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    times = []
    for _ in range(steps):
        t0 = time.perf_counter()
        x = torch.randn(512, 1024) * torch.rand(512, 1) * 4
        y = torch.randint(0, 10, (512,))
        flat = x.abs().flatten()
        limit = torch.quantile(flat, 0.99)
        x = x.clamp(-limit, limit)
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        times.append(time.perf_counter() - t0)

    t = sorted(times[5:])
    print(f"median step time: {t[len(t) // 2] * 1e3:.2f} ms over {len(t)} steps")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else STEPS)
