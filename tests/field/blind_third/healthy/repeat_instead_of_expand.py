"""Healthy twin of problems/repeat_instead_of_expand.py: the weight is broadcast with ``expand`` instead of copied with ``repeat``.

The problem it fixes: A shared weight matrix copied for every batch element with ``repeat`` before ``torch.bmm``.

Thread: "replacing .repeat(...) with .expand(...)" (when the dimension to
grow has size 1, ``expand`` gives the same result as ``repeat`` without
allocating and copying memory; benchmark included),
https://github.com/kornia/kornia/pull/2059

Problem: a layer applies one shared (256x256) transform to every sample
with ``torch.bmm(h.unsqueeze(1), self.weight.unsqueeze(0).repeat(b, 1, 1))``,
so each forward writes a batch-sized copy of the weight (128 copies,
32 MiB) and each backward builds and reduces a gradient of that size.
Expected fix: ``self.weight.unsqueeze(0).expand(b, -1, -1)`` (a view, no
copy), or simply ``h @ self.weight`` and let broadcasting do it.
"""
import sys
import time

import torch
import torch.nn.functional as F
from torch import nn


class SharedTransform(nn.Module):
    def __init__(self, dim=256):
        super().__init__()
        self.inp = nn.Linear(32, dim)
        self.weight = nn.Parameter(torch.randn(dim, dim) / dim ** 0.5)
        self.out = nn.Linear(dim, 4)

    def forward(self, x):
        h = torch.relu(self.inp(x))
        b = h.shape[0]
        h = torch.bmm(h.unsqueeze(1), self.weight.unsqueeze(0).expand(b, -1, -1)).squeeze(1)
        return self.out(torch.relu(h))


def main(steps=60):
    torch.manual_seed(0)
    model = SharedTransform()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    times = []
    for step in range(steps):
        t0 = time.perf_counter()
        x = torch.randn(128, 32)
        y = (x[:, 0] > 0).long() + 2 * (x[:, 1] > 0).long()
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        times.append(time.perf_counter() - t0)
    t = sorted(times[5:])
    print(f"median step time: {t[len(t) // 2] * 1e3:.2f} ms over {len(t)} steps")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 60)
