"""Healthy twin of problems/diag_matrix_matmul.py: the gate is applied
element-wise, ``x * self.gate``.

The problem it fixes: Per-feature gates applied by multiplying with
``torch.diag(g)``.
"""
import sys
import time

import torch
import torch.nn.functional as F
from torch import nn

STEPS = 60


class Gate(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.gate = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return x * self.gate


def main(steps=STEPS):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 1024), nn.ReLU(), Gate(1024), nn.Linear(1024, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    times = []
    for _ in range(steps):
        t0 = time.perf_counter()
        x = torch.randn(128, 64)
        y = torch.randint(0, 10, (128,))
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        times.append(time.perf_counter() - t0)

    t = sorted(times[5:])
    print(f"median step time: {t[len(t) // 2] * 1e3:.2f} ms over {len(t)} steps")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else STEPS)
