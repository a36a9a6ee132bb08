"""Healthy twin of problems/separate_triplet_forwards.py: anchors, positives and
negatives are encoded in one batched forward pass.

The problem it fixes: A triplet network that encodes anchors, positives and
negatives in three separate forward passes.
"""
import sys
import time

import torch
import torch.nn.functional as F
from torch import nn

STEPS = 40


def encoder():
    layers = []
    for _ in range(6):
        layers += [nn.Linear(128, 128), nn.LayerNorm(128), nn.GELU()]
    return nn.Sequential(*layers, nn.Linear(128, 32))


def main(steps=STEPS):
    torch.manual_seed(0)
    net = encoder()
    opt = torch.optim.Adam(net.parameters(), lr=1e-3)
    times = []
    for _ in range(steps):
        anchor, positive, negative = (torch.randn(16, 128) for _ in range(3))
        t0 = time.perf_counter()
        a, p, n = net(torch.cat([anchor, positive, negative])).chunk(3)
        loss = F.triplet_margin_loss(a, p, n, margin=0.5)
        opt.zero_grad()
        loss.backward()
        opt.step()
        times.append(time.perf_counter() - t0)

    t = sorted(times[5:])
    print(f"median step time: {t[len(t) // 2] * 1e3:.2f} ms over {len(t)} steps")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else STEPS)
