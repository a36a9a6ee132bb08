"""Healthy twin of problems/new_iterator_every_step.py: one iterator, created before the loop and renewed only at epoch end.

The problem it fixes: A new DataLoader iterator created for every batch with ``next(iter(loader))``.

Thread: "(MNIST Tutorial) Fixing iterator usage resulting in slow training"
(the tutorial created a new iterator every step and took only its first
batch; creating the iterator once and drawing from it until it is exhausted
made training 2-3x faster),
https://github.com/SakanaAI/continuous-thought-machines/pull/19

Problem: the loop fetches each batch with ``next(iter(loader))``; every
call builds a fresh iterator over a shuffled 1-million-row dataset, which
draws a new random permutation of all 1 M indices only to take 64 of them.
Expected fix: create the iterator once (``for x, y in loader``, or
``it = iter(loader)`` before the loop, re-created only when exhausted).
"""
import sys
import time

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


def main(steps=80):
    torch.manual_seed(0)
    x = torch.randn(1_000_000, 8)
    data = TensorDataset(x, (x[:, 0] > 0).long())
    loader = DataLoader(data, batch_size=64, shuffle=True)
    model = nn.Sequential(nn.Linear(8, 64), nn.ReLU(), nn.Linear(64, 2))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    batches = iter(loader)
    times = []
    for step in range(steps):
        t0 = time.perf_counter()
        try:
            xb, yb = next(batches)
        except StopIteration:
            batches = iter(loader)
            xb, yb = next(batches)
        loss = F.cross_entropy(model(xb), yb)
        opt.zero_grad()
        loss.backward()
        opt.step()
        times.append(time.perf_counter() - t0)
    t = sorted(times[5:])
    print(f"median step time: {t[len(t) // 2] * 1e3:.2f} ms over {len(t)} steps")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 80)
