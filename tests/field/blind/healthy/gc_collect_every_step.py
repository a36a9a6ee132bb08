"""Healthy twin of problems/gc_collect_every_step.py: no forced collection in the loop.

The problem it fixes: A full garbage collection forced after every training step.

Thread: "gc.collect() Slows Python 32%: When Manual GC Hurts" (a pipeline that
called ``gc.collect()`` after every batch "to keep memory under control"),
https://dev.to/tildalice/gccollect-slows-python-32-when-manual-gc-hurts-3fhp

Problem: the loop calls ``gc.collect()`` each step; with torch imported and a
vocabulary of Python objects alive, each full collection walks hundreds of
thousands of objects.
Expected fix: drop the per-step ``gc.collect()`` (collect rarely, e.g. per
epoch, or ``gc.freeze()`` after setup).
"""
import sys
import time

import torch
import torch.nn.functional as F
from torch import nn


def main(steps=80):
    torch.manual_seed(0)
    vocab = {f"token{i}": [i, str(i), (i, i + 1)] for i in range(50_000)}
    model = nn.Sequential(nn.EmbeddingBag(20_000, 32), nn.Linear(32, 2))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    times = []
    for step in range(steps):
        t0 = time.perf_counter()
        tokens = torch.randint(0, 20_000, (64, 20))
        labels = (tokens[:, 0] % 2)
        loss = F.cross_entropy(model(tokens), labels)
        opt.zero_grad()
        loss.backward()
        opt.step()
        times.append(time.perf_counter() - t0)
    t = sorted(times[5:])
    print(f"vocabulary of {len(vocab)} tokens")
    print(f"median step time: {t[len(t) // 2] * 1e3:.2f} ms over {len(t)} steps")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 80)
