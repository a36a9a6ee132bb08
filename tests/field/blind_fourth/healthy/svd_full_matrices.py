"""Healthy twin of problems/svd_full_matrices.py: the reduced SVD,
``full_matrices=False``.

The problem it fixes: A tall matrix decomposed with ``torch.linalg.svd`` at its
default ``full_matrices=True``.
"""
import sys
import time

import torch
import torch.nn.functional as F
from torch import nn

STEPS = 60


def main(steps=STEPS):
    torch.manual_seed(0)
    encoder = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 32))
    head = nn.Linear(32, 10)
    opt = torch.optim.SGD([*encoder.parameters(), *head.parameters()], lr=0.05)
    times = []
    for _ in range(steps):
        t0 = time.perf_counter()
        x = torch.randn(1024, 64)
        y = torch.randint(0, 10, (1024,))
        feats = encoder(x)
        with torch.no_grad():
            u, s, vh = torch.linalg.svd(feats, full_matrices=False)
            basis = vh[:8]
        denoised = feats @ basis.T @ basis
        loss = F.cross_entropy(head(denoised), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        times.append(time.perf_counter() - t0)

    t = sorted(times[5:])
    print(f"median step time: {t[len(t) // 2] * 1e3:.2f} ms over {len(t)} steps")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else STEPS)
