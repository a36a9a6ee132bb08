"""Batches whitened with the general eigensolver ``torch.linalg.eig`` applied to
a symmetric covariance matrix.

Thread: "Can torch.linalg.eig() be replaced with torch.linalg.eigh() in
_get_steering_vector_evd() in MVDR", https://github.com/pytorch/audio/issues/2537

Problem: every batch of features is ZCA-whitened before scoring, using the
eigendecomposition of its 256x256 covariance matrix computed with
``torch.linalg.eig``. The covariance is symmetric, but ``eig`` runs the general
non-symmetric algorithm (Hessenberg reduction and QR iterations on an
unsymmetric matrix), returns complex eigenvalues and eigenvectors, and the
script then takes ``.real`` of both.
Expected fix: use ``torch.linalg.eigh`` for symmetric (Hermitian) matrices; it
is several times faster and returns real, sorted eigenvalues.
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
    evals, evecs = torch.linalg.eig(cov)
    evals, evecs = evals.real, evecs.real
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
