"""Input batches marked ``requires_grad`` although their gradient is never used.

Thread: "The input of branch_net is set to requires_grad" (inputs are set
to require gradients although the input gradient is never used; the result
is not affected but it may slow down the training step),
https://github.com/lululxvi/deepxde/issues/2011

Problem: every batch is made with ``x.requires_grad_()`` before the forward
pass, so each backward also computes the gradient with respect to the
input images: an extra transposed convolution through the widest layer,
thrown away.
Expected fix: leave inputs as plain tensors (``requires_grad=False``, the
default); only set it where an input gradient is really needed (e.g. a
gradient penalty).
"""
import sys
import time

import torch
import torch.nn.functional as F
from torch import nn


def main(steps=60):
    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Conv2d(3, 64, 5, padding=2), nn.ReLU(), nn.MaxPool2d(4),
        nn.Conv2d(64, 32, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
        nn.Linear(32, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    images = torch.randn(512, 3, 48, 48)
    labels = torch.randint(0, 10, (512,))
    times = []
    for step in range(steps):
        t0 = time.perf_counter()
        idx = torch.randint(0, 512, (32,))
        x = images[idx].clone().requires_grad_()
        loss = F.cross_entropy(model(x), labels[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
        times.append(time.perf_counter() - t0)
    t = sorted(times[5:])
    print(f"median step time: {t[len(t) // 2] * 1e3:.2f} ms over {len(t)} steps")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 60)
