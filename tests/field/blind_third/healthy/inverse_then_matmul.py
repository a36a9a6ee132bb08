"""Healthy twin of problems/inverse_then_matmul.py: the systems are solved with ``torch.linalg.solve``.

The problem it fixes: Linear systems solved by forming the inverse matrix and multiplying.

Thread: "Replace all `torch.linalg.inv` by `torch.linalg.solve` in TRAK
attributor" (``torch.linalg.solve`` computes ``A.inverse() @ B`` faster and
more stably than doing the two steps separately),
https://github.com/TRAIS-Lab/dattri/issues/174

Problem: a kernel-regression layer solves ``(K + s I) x = y`` for a batch
of systems with ``torch.linalg.inv(K + s I) @ y`` on every training step,
forward and backward, computing a full inverse nobody needs.
Expected fix: ``torch.linalg.solve(K + s I, y)`` (or a Cholesky solve,
``torch.cholesky_solve``, since the matrix is symmetric positive definite).
"""
import sys
import time

import torch
from torch import nn


class KernelRegression(nn.Module):
    def __init__(self, dim=16):
        super().__init__()
        self.proj = nn.Linear(dim, dim)
        self.log_noise = nn.Parameter(torch.tensor(-1.0))

    def forward(self, x, y):
        z = self.proj(x)
        k = torch.exp(-torch.cdist(z, z).pow(2))
        eye = torch.eye(k.shape[-1]).expand_as(k)
        alpha = torch.linalg.solve(k + self.log_noise.exp() * eye, y)
        return k @ alpha


def main(steps=60):
    torch.manual_seed(0)
    model = KernelRegression()
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    times = []
    for step in range(steps):
        t0 = time.perf_counter()
        x = torch.randn(16, 128, 16)
        y = torch.sin(x.sum(-1, keepdim=True))
        loss = (model(x, y) - y).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        times.append(time.perf_counter() - t0)
    t = sorted(times[5:])
    print(f"median step time: {t[len(t) // 2] * 1e3:.2f} ms over {len(t)} steps")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 60)
