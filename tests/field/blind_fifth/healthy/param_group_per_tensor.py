"""Healthy twin of problems/param_group_per_tensor.py: parameters are grouped by
weight decay, two groups in all.

The problem it fixes: An optimizer built with one parameter group per parameter
tensor.
"""
import sys
import time

import torch
import torch.nn.functional as F
from torch import nn

STEPS = 40


def make_model():
    layers = []
    for _ in range(24):
        layers += [nn.Linear(64, 64), nn.LayerNorm(64), nn.ReLU()]
    return nn.Sequential(*layers, nn.Linear(64, 10))


def param_groups(model):
    decay = [p for p in model.parameters() if p.dim() > 1]
    no_decay = [p for p in model.parameters() if p.dim() <= 1]
    return [{"params": decay, "weight_decay": 0.05}, {"params": no_decay, "weight_decay": 0.0}]


def main(steps=STEPS):
    torch.manual_seed(0)
    model = make_model()
    opt = torch.optim.AdamW(param_groups(model), lr=1e-3, foreach=True)
    x = torch.randn(16, 64)
    y = torch.randint(0, 10, (16,))
    times = []
    for _ in range(steps):
        t0 = time.perf_counter()
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        times.append(time.perf_counter() - t0)

    t = sorted(times[5:])
    print(f"median step time: {t[len(t) // 2] * 1e3:.2f} ms over {len(t)} steps")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else STEPS)
