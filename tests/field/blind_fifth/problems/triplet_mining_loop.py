"""Batch-hard triplet mining done anchor by anchor in a Python loop.

Thread: "TripletMarginLoss Performance",
https://github.com/KevinMusgrave/pytorch-metric-learning/issues/192

Problem: for each of the 256 anchors in a batch, the loss selects the hardest
positive and the hardest negative with a masked lookup in its row of the
distance matrix (``dist[i][labels == labels[i]].max()`` and the like) inside a
Python ``for`` loop, then stacks the 256 results. That is a few thousand small
tensor operations forward and as many autograd nodes backward per step, where
the same selection is two masked reductions over the whole distance matrix.
Expected fix: vectorise the mining: build the (B, B) same-label mask once and
take ``(dist * pos_mask).max(1)`` and ``dist.masked_fill(pos_mask,
inf).min(1)`` for all anchors at once.
"""
import sys
import time

import torch
import torch.nn.functional as F
from torch import nn

STEPS = 40
MARGIN = 0.2


def batch_hard_loss(emb, labels):
    dist = torch.cdist(emb, emb)
    losses = []
    for i in range(len(labels)):
        same = labels == labels[i]
        same[i] = False
        hardest_pos = dist[i][same].max()
        hardest_neg = dist[i][labels != labels[i]].min()
        losses.append(F.relu(hardest_pos - hardest_neg + MARGIN))
    return torch.stack(losses).mean()


def main(steps=STEPS):
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(128, 256), nn.ReLU(), nn.Linear(256, 64))
    opt = torch.optim.Adam(net.parameters(), lr=1e-3)
    x = torch.randn(256, 128)
    labels = torch.arange(64).repeat_interleave(4)
    times = []
    for _ in range(steps):
        t0 = time.perf_counter()
        loss = batch_hard_loss(F.normalize(net(x), dim=1), labels)
        opt.zero_grad()
        loss.backward()
        opt.step()
        times.append(time.perf_counter() - t0)

    t = sorted(times[5:])
    print(f"median step time: {t[len(t) // 2] * 1e3:.2f} ms over {len(t)} steps")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else STEPS)
