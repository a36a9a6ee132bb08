"""Healthy twin of problems/profiler_left_on.py: the training loop runs without
the profiler.

The problem it fixes: A whole training run wrapped in
``torch.profiler.profile``.
"""
import sys
import time

import torch
from torch import nn

STEPS = 40


def make_model():
    layers = []
    for _ in range(12):
        layers += [nn.Linear(64, 64), nn.LayerNorm(64), nn.GELU()]
    return nn.Sequential(*layers, nn.Linear(64, 10))


def main(steps=STEPS):
    torch.manual_seed(0)
    model = make_model()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    x = torch.randn(32, 64)
    y = torch.randint(0, 10, (32,))
    times = []
    for _ in range(steps):
        t0 = time.perf_counter()
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        times.append(time.perf_counter() - t0)

    t = sorted(times[5:])
    print(f"median step time: {t[len(t) // 2] * 1e3:.2f} ms over {len(t)} steps")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else STEPS)
