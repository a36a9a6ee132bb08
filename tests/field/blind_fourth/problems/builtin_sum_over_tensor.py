"""A batch loss reduced with Python's built-in ``sum()`` over a tensor.

Thread: "The Faster Way to Add?",
http://www.gpupuzzlers.com/posts/faster-way-to-add/

Problem: the per-sample losses (a 1-D tensor of 512) are reduced with
``sum(losses) / len(losses)``; the built-in ``sum`` iterates over the tensor,
so every step runs 512 indexing operations and 512 scalar additions forward,
and as many autograd nodes backward, instead of one reduction.
Expected fix: reduce with the tensor's own method, ``losses.mean()`` (or
``torch.sum``/``reduction="mean"``).
"""
import sys
import time

import torch
import torch.nn.functional as F
from torch import nn

STEPS = 80


def main(steps=STEPS):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    times = []
    for _ in range(steps):
        t0 = time.perf_counter()
        x = torch.randn(512, 32)
        y = torch.randint(0, 10, (512,))
        losses = F.cross_entropy(model(x), y, reduction="none")
        loss = sum(losses) / len(losses)
        opt.zero_grad()
        loss.backward()
        opt.step()
        times.append(time.perf_counter() - t0)

    t = sorted(times[5:])
    print(f"median step time: {t[len(t) // 2] * 1e3:.2f} ms over {len(t)} steps")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else STEPS)
