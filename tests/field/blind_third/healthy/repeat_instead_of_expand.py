"""Healthy twin of problems/repeat_instead_of_expand.py: the bias is broadcast with ``expand`` instead of copied with ``repeat``.

The problem it fixes: A per-head attention bias copied for every batch element with ``repeat``.

Thread: "replacing .repeat(...) with .expand(...)" (when the dimension to
grow has size 1, ``expand`` gives the same result as ``repeat`` without
allocating and copying memory; benchmark included),
https://github.com/kornia/kornia/pull/2059

Problem: a relative-position bias of shape (heads, L, L) is materialised
for the whole batch with ``bias.unsqueeze(0).repeat(B, 1, 1, 1)`` before it
is added to the attention scores, so each forward writes (and each backward
reads and reduces) a batch-sized copy of a tensor that broadcasting would
share.
Expected fix: ``bias.unsqueeze(0).expand(B, -1, -1, -1)`` or simply add
``bias`` and let broadcasting do it.
"""
import sys
import time

import torch
import torch.nn.functional as F
from torch import nn


class BiasedAttention(nn.Module):
    def __init__(self, dim=32, heads=8, length=128):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.bias = nn.Parameter(torch.zeros(heads, length, length))
        self.out = nn.Linear(dim, 2)

    def forward(self, x):
        b, n, d = x.shape
        q, k, v = self.qkv(x).view(b, n, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        scores = q @ k.transpose(-1, -2) / (d // self.heads) ** 0.5
        scores = scores + self.bias.unsqueeze(0).expand(b, -1, -1, -1)
        h = (scores.softmax(-1) @ v).transpose(1, 2).reshape(b, n, d)
        return self.out(h.mean(1))


def main(steps=60):
    torch.manual_seed(0)
    model = BiasedAttention()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    times = []
    for step in range(steps):
        t0 = time.perf_counter()
        x = torch.randn(32, 128, 32)
        y = (x[:, 0, 0] > 0).long()
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        times.append(time.perf_counter() - t0)
    t = sorted(times[5:])
    print(f"median step time: {t[len(t) // 2] * 1e3:.2f} ms over {len(t)} steps")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 60)
