"""Healthy twin of problems/unfrozen_backbone.py: the backbone is frozen.

The problem it fixes: Fine-tuning a head while the backbone still computes gradients.

Thread: "Model freeze explanation (transfer learning)",
https://discuss.pytorch.org/t/model-freeze-explanation-transfer-learning/76284

Problem: only the classifier head is given to the optimizer, but the
pretrained backbone's parameters keep ``requires_grad=True``, so every
backward pass computes (and throws away) gradients for the whole backbone.
Expected fix: freeze the backbone (``p.requires_grad_(False)`` for its
parameters, or run it under ``torch.no_grad()``).
"""
import sys
import time

import torch
import torch.nn.functional as F
from torch import nn


def backbone():
    return nn.Sequential(
        nn.Conv2d(3, 32, 3, padding=1), nn.ReLU(),
        nn.Conv2d(32, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(),
        nn.Conv2d(64, 64, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten())


def main(steps=60):
    torch.manual_seed(0)
    features = backbone()
    head = nn.Linear(64, 10)
    features.requires_grad_(False)
    model = nn.Sequential(features, head)
    opt = torch.optim.SGD(head.parameters(), lr=0.01, momentum=0.9)
    x_all = torch.randn(1024, 3, 32, 32)
    y_all = torch.randint(0, 10, (1024,))
    times = []
    for step in range(steps):
        t0 = time.perf_counter()
        idx = torch.randint(0, len(x_all), (16,))
        loss = F.cross_entropy(model(x_all[idx]), y_all[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
        times.append(time.perf_counter() - t0)
    t = sorted(times[5:])
    print(f"median step time: {t[len(t) // 2] * 1e3:.2f} ms over {len(t)} steps")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 60)
