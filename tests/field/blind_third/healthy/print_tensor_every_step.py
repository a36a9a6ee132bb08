"""Healthy twin of problems/print_tensor_every_step.py: the progress line prints Python numbers (``.item()``, ``.tolist()``).

The problem it fixes: Progress printed every step by formatting tensors, not Python numbers.

Thread: "Print FloatTensor is extremely slow" (profiling shows almost all of
the time in ``_tensor_str``, the tensor-to-string formatting),
https://github.com/pytorch/pytorch/issues/4190

Problem: each step prints ``f"step {step} loss {loss} acc {acc} logits
{logits[:2]}"`` where ``loss``, ``acc`` and ``logits`` are tensors, so every
line goes through ``Tensor.__repr__`` (number-format analysis and
element-wise formatting) three times for a dozen numbers.
Expected fix: print Python values, ``loss.item()``, ``acc.item()``,
``logits[:2].tolist()`` (and print every N steps rather than every step).
"""
import sys
import time

import torch
import torch.nn.functional as F
from torch import nn


def main(steps=150):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    times = []
    for step in range(steps):
        t0 = time.perf_counter()
        x = torch.randn(32, 16)
        y = (x[:, 0] > 0).long() + 2 * (x[:, 1] > 0).long()
        logits = model(x)
        loss = F.cross_entropy(logits, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        pred = logits.argmax(1)
        acc = (pred == y).float().mean()
        print(f"step {step} loss {loss.item():.4f} acc {acc.item():.4f} logits {logits[:2].tolist()}")
        times.append(time.perf_counter() - t0)
    t = sorted(times[5:])
    print(f"median step time: {t[len(t) // 2] * 1e3:.2f} ms over {len(t)} steps")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 150)
