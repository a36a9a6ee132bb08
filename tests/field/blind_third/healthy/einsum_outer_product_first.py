"""Healthy twin of problems/einsum_outer_product_first.py: the contraction is ordered so ``W`` is applied before the product with ``v``.

The problem it fixes: A three-operand ``torch.einsum`` whose left-to-right order builds a huge intermediate.

Thread: "Added optimize kwarg to torch.einsum" (without a contraction path,
``torch.einsum`` contracts the operands left to right; benchmarks show
three-operand contractions thousands of times slower than with an optimised
order),
https://github.com/pytorch/pytorch/pull/60191

Problem: a bilinear scorer computes ``torch.einsum("bi,bj,ij->b", u, v, W)``.
Contracted left to right (opt_einsum is not installed), ``bi,bj`` becomes a
(batch, 128, 128) outer-product tensor before ``W`` is applied, forward and
backward, instead of two small matrix products.
Expected fix: give the contraction a good order: ``torch.einsum("bi,ij,bj->b",
u, W, v)`` (or ``((u @ W) * v).sum(-1)``, ``nn.Bilinear``, or install
``opt_einsum`` so ``torch.backends.opt_einsum`` picks the path).
"""
import sys
import time

import torch
import torch.nn.functional as F
from torch import nn


class Bilinear(nn.Module):
    def __init__(self, dim=128):
        super().__init__()
        self.left = nn.Linear(64, dim)
        self.right = nn.Linear(64, dim)
        self.weight = nn.Parameter(torch.randn(dim, dim) / dim)

    def forward(self, a, b):
        u, v = self.left(a), self.right(b)
        return torch.einsum("bi,ij,bj->b", u, self.weight, v)


def main(steps=60):
    torch.manual_seed(0)
    model = Bilinear()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    times = []
    for step in range(steps):
        t0 = time.perf_counter()
        a, b = torch.randn(256, 64), torch.randn(256, 64)
        target = (a[:, 0] * b[:, 1] > 0).float()
        loss = F.binary_cross_entropy_with_logits(model(a, b), target)
        opt.zero_grad()
        loss.backward()
        opt.step()
        times.append(time.perf_counter() - t0)
    t = sorted(times[5:])
    print(f"median step time: {t[len(t) // 2] * 1e3:.2f} ms over {len(t)} steps")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 60)
