"""Healthy twin of problems/broadcast_pairwise_distance.py: the distances come from ``torch.cdist``.

The problem it fixes: Pairwise distances computed by broadcasting a (N, M, D) difference tensor.

Thread: "Recommendation: Speeding up non-faiss distance matrix calculations"
(computing L2 distances as ``torch.sum((x[:, None] - y[None, :]) ** 2, -1)``
is very inefficient; ``torch.cdist`` runs almost 10x faster and uses less
memory),
https://github.com/iyttor/GPNN/issues/7

Problem: a prototype loss compares 128 embeddings with 256 class
prototypes through ``((e[:, None] - p[None]) ** 2).sum(-1)``, materialising a
128x256x128 difference tensor (16 MiB) forward and again in backward.
Expected fix: use ``torch.cdist`` (matmul-based: ``|x|^2 + |y|^2 - 2 x y^T``)
for the distance matrix instead of the broadcast difference.
"""
import sys
import time

import torch
import torch.nn.functional as F
from torch import nn


def main(steps=60):
    torch.manual_seed(0)
    encoder = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 128))
    prototypes = nn.Parameter(torch.randn(256, 128))
    opt = torch.optim.Adam([*encoder.parameters(), prototypes], lr=1e-3)
    times = []
    for step in range(steps):
        t0 = time.perf_counter()
        x = torch.randn(128, 64)
        y = torch.randint(0, 256, (128,))
        e = encoder(x)
        dist = torch.cdist(e, prototypes) ** 2
        loss = F.cross_entropy(-dist, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        times.append(time.perf_counter() - t0)
    t = sorted(times[5:])
    print(f"median step time: {t[len(t) // 2] * 1e3:.2f} ms over {len(t)} steps")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 60)
