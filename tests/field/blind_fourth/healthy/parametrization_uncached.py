"""Healthy twin of problems/parametrization_uncached.py: the forward pass runs
inside ``parametrize.cached()``.

The problem it fixes: An orthogonal recurrent weight re-parametrized at every
time step.
"""
import sys
import time

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.utils import parametrizations, parametrize

STEPS = 40


class OrthoRNN(nn.Module):
    def __init__(self, dim_in, hidden):
        super().__init__()
        self.inp = nn.Linear(dim_in, hidden)
        self.rec = parametrizations.orthogonal(nn.Linear(hidden, hidden, bias=False))
        self.out = nn.Linear(hidden, 10)

    def forward(self, x):
        h = torch.zeros(x.shape[0], self.rec.weight.shape[0])
        for t in range(x.shape[1]):
            h = torch.tanh(self.inp(x[:, t]) + h @ self.rec.weight.T)
        return self.out(h)


def main(steps=STEPS):
    torch.manual_seed(0)
    model = OrthoRNN(16, 128)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    times = []
    for _ in range(steps):
        t0 = time.perf_counter()
        x = torch.randn(32, 40, 16)
        y = torch.randint(0, 10, (32,))
        with parametrize.cached():
            out = model(x)
        loss = F.cross_entropy(out, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        times.append(time.perf_counter() - t0)

    t = sorted(times[5:])
    print(f"median step time: {t[len(t) // 2] * 1e3:.2f} ms over {len(t)} steps")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else STEPS)
