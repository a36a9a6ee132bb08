"""Per-feature gates applied by multiplying with ``torch.diag(g)``.

Thread: "Python numpy matrix multiplication with one diagonal matrix",
https://errorhandle.ai/python-numpy-matrix-multiplication-with-one-diagonal-matrix

Problem: a gating layer scales each of its 1024 features by a learned gate with
``x @ torch.diag(self.gate)``: every step builds a 1024x1024 matrix that is
zero off the diagonal and runs a full (batch x 1024 x 1024) matrix product
forward and two more backward, where an element-wise product does the same.
Expected fix: multiply element-wise with broadcasting, ``x * self.gate``.
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
        return x @ torch.diag(self.gate)


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
