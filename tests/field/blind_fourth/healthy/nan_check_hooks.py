"""Healthy twin of problems/nan_check_hooks.py: no NaN hooks are registered; the
loss alone is checked.

The problem it fixes: NaN-detection forward hooks left on every module for the
whole run.
"""
import sys
import time

import torch
import torch.nn.functional as F
from torch import nn

STEPS = 100


def main(steps=STEPS):
    torch.manual_seed(0)
    layers = []
    for _ in range(16):
        layers += [nn.Linear(32, 32), nn.LayerNorm(32), nn.ReLU()]
    model = nn.Sequential(*layers, nn.Linear(32, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    times = []
    for _ in range(steps):
        t0 = time.perf_counter()
        x = torch.randn(32, 32)
        y = torch.randint(0, 10, (32,))
        loss = F.cross_entropy(model(x), y)
        if not torch.isfinite(loss):
            raise FloatingPointError('non-finite loss')
        opt.zero_grad()
        loss.backward()
        opt.step()
        times.append(time.perf_counter() - t0)

    t = sorted(times[5:])
    print(f"median step time: {t[len(t) // 2] * 1e3:.2f} ms over {len(t)} steps")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else STEPS)
