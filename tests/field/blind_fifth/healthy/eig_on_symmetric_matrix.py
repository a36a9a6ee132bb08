"""Healthy twin of problems/eig_on_symmetric_matrix.py: the symmetric covariance
is decomposed with ``torch.linalg.eigh``.

The problem it fixes: Batches whitened with the general eigensolver
``torch.linalg.eig`` applied to a symmetric covariance matrix.
"""
import sys
import time

import torch
from torch import nn

STEPS = 40
DIM = 256


def whiten(x):
    x = x - x.mean(0)
    cov = x.T @ x / (x.shape[0] - 1) + 1e-3 * torch.eye(x.shape[1])
    evals, evecs = torch.linalg.eigh(cov)
    return x @ evecs @ torch.diag(evals.rsqrt()) @ evecs.T


def main(steps=STEPS):
    torch.manual_seed(0)
    scorer = nn.Sequential(nn.Linear(DIM, 128), nn.ReLU(), nn.Linear(128, 1)).eval()
    mix = torch.randn(DIM, DIM) / DIM ** 0.5
    times = []
    with torch.no_grad():
        for _ in range(steps):
            batch = torch.randn(1024, DIM) @ mix
            t0 = time.perf_counter()
            scores = scorer(whiten(batch))
            times.append(time.perf_counter() - t0)

    t = sorted(times[5:])
    print(f"median step time: {t[len(t) // 2] * 1e3:.2f} ms over {len(t)} steps")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else STEPS)
