"""A tall matrix decomposed with ``torch.linalg.svd`` at its default
``full_matrices=True``.

Thread: "SVD with `full_matrices=False` slower than `full_matrices=True` &
`full_matrices=False` on GPU 1000x slower than CPU",
https://github.com/pytorch/pytorch/issues/86234

Problem: each step projects the batch's features (1024 x 32) onto their top 8
principal directions with ``torch.linalg.svd(feats)``; the default
``full_matrices=True`` also computes a full 1024x1024 ``U`` (its orthogonal
completion included) that the projection never uses: it needs only ``Vh``.
Expected fix: ``torch.linalg.svd(feats, full_matrices=False)`` (the reduced
SVD, 1024x32), or ``torch.svd_lowrank`` for a few components.
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
            u, s, vh = torch.linalg.svd(feats)
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
