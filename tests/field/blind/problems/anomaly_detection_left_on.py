"""Autograd anomaly detection left switched on for a whole training run.

Thread: "Add anomaly detection context manager to catch loss nan and errors"
(pytorch/ignite, "if detect anomaly is enabled single epoch training is ~2
times increased"), https://github.com/pytorch/ignite/pull/219 ; also
"Traing issue: torch.autograd.set_detect_anomaly(True)",
https://github.com/icon-lab/SynDiff/issues/43

Problem: ``torch.autograd.set_detect_anomaly(True)``, added once to hunt a
NaN, stays in the script and records a Python stack trace for every
operation and checks every gradient.
Expected fix: remove it (or enable it only while debugging).
"""
import sys
import time

import torch
import torch.nn.functional as F
from torch import nn

torch.autograd.set_detect_anomaly(True)


def main(steps=80):
    torch.manual_seed(0)
    layers = []
    for _ in range(6):
        layers += [nn.Linear(128, 128), nn.LayerNorm(128), nn.GELU()]
    model = nn.Sequential(nn.Linear(32, 128), *layers, nn.Linear(128, 1))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    x_all, times = torch.randn(8192, 32), []
    y_all = x_all.pow(2).sum(1, keepdim=True).sqrt()
    for step in range(steps):
        t0 = time.perf_counter()
        idx = torch.randint(0, len(x_all), (64,))
        loss = F.mse_loss(model(x_all[idx]), y_all[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
        times.append(time.perf_counter() - t0)
    t = sorted(times[5:])
    print(f"median step time: {t[len(t) // 2] * 1e3:.2f} ms over {len(t)} steps")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 80)
