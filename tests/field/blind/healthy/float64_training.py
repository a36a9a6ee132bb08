"""Healthy twin of problems/float64_training.py: the default float32 dtype is kept.

The problem it fixes: Training in float64 because the default dtype was switched to double.

Thread: "pytorch 如何使用float64训练" (how to train in float64 with
``torch.set_default_dtype(torch.float64)``; it doubles memory and is rarely
needed), https://haodaima.com/python/article_39_2855.htm

Problem: ``torch.set_default_dtype(torch.float64)`` at the top of the script
(added for one numerically sensitive computation) makes every parameter,
activation and matmul double precision, about twice the work of float32.
Expected fix: keep the default float32 and use float64 only where it is
needed.
"""
import sys
import time

import torch
import torch.nn.functional as F
from torch import nn


def main(steps=80):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(128, 512), nn.Tanh(), nn.Linear(512, 512), nn.Tanh(),
                          nn.Linear(512, 512), nn.Tanh(), nn.Linear(512, 1))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    x_all = torch.randn(8192, 128)
    y_all = torch.sin(x_all[:, :4].sum(1, keepdim=True))
    times = []
    for step in range(steps):
        t0 = time.perf_counter()
        idx = torch.randint(0, len(x_all), (128,))
        loss = F.mse_loss(model(x_all[idx]), y_all[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
        times.append(time.perf_counter() - t0)
    t = sorted(times[5:])
    print(f"dtype: {next(model.parameters()).dtype}")
    print(f"median step time: {t[len(t) // 2] * 1e3:.2f} ms over {len(t)} steps")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 80)
