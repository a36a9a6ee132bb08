"""Class centroids for a prototype loss computed one class at a time.

Thread: "Vectorizing Ragged Arrays (Numpy Gems, Part 4)",
https://vladfeinberg.com/2021/01/07/vectorizing-ragged-arrays.html

Problem: a prototype (center) loss needs the mean embedding of each of the 200
classes in the batch. The script loops over the classes and computes
``emb[labels == c].mean(0)`` for each, then stacks the centroids: per class a
comparison over the whole batch, a boolean-mask gather and a mean, forward and
backward, i.e. hundreds of small operations per step for what is one grouped
sum.
Expected fix: compute all class sums at once with ``index_add_`` (or
``scatter_reduce``/a one-hot matrix product) and divide by
``torch.bincount(labels)``.
"""
import sys
import time

import torch
import torch.nn.functional as F
from torch import nn

STEPS = 40
CLASSES = 200


def centroids(emb, labels):
    return torch.stack([emb[labels == c].mean(0) for c in range(CLASSES)])


def main(steps=STEPS):
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 32))
    opt = torch.optim.Adam(net.parameters(), lr=1e-3)
    x = torch.randn(1024, 64)
    labels = torch.arange(1024) % CLASSES
    times = []
    for _ in range(steps):
        t0 = time.perf_counter()
        emb = net(x)
        logits = -torch.cdist(emb, centroids(emb, labels))
        loss = F.cross_entropy(logits, labels)
        opt.zero_grad()
        loss.backward()
        opt.step()
        times.append(time.perf_counter() - t0)

    t = sorted(times[5:])
    print(f"median step time: {t[len(t) // 2] * 1e3:.2f} ms over {len(t)} steps")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else STEPS)
