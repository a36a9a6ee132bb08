"""A masked pixel loss computed by boolean-mask indexing instead of multiplying by the mask.

Thread: "Use torch.mul instead of masked_select" (selecting the masked
elements caused memory problems; multiplying by the mask does the same
reduction without building an index),
https://github.com/microsoft/InnerEye-DeepLearning/pull/272

Problem: the per-pixel loss is reduced over the labelled region with
``loss_map[mask].mean()``; boolean indexing first counts and lists the
selected positions (``nonzero``), gathers them into a new tensor and, in
the backward pass, scatters the gradient back into a zero-filled full-size
tensor, on every step.
Expected fix: ``(loss_map * mask).sum() / mask.sum()`` (or ``torch.where``
with a fixed shape), which stays elementwise and needs no index.
"""
import sys
import time

import torch
import torch.nn.functional as F
from torch import nn


def main(steps=60):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(), nn.Conv2d(4, 1, 1))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    times = []
    for step in range(steps):
        t0 = time.perf_counter()
        x = torch.randn(8, 1, 192, 192)
        target = (x > 0.5).float()
        mask = torch.rand(8, 1, 192, 192) > 0.3
        loss_map = F.binary_cross_entropy_with_logits(model(x), target, reduction="none")
        loss = loss_map[mask].mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        times.append(time.perf_counter() - t0)
    t = sorted(times[5:])
    print(f"median step time: {t[len(t) // 2] * 1e3:.2f} ms over {len(t)} steps")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 60)
