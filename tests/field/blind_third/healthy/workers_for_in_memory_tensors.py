"""Healthy twin of problems/workers_for_in_memory_tensors.py: the in-memory tensors are batched in the training process (``num_workers=0``).

The problem it fixes: DataLoader worker processes serving batches of a small in-memory tensor dataset.

Thread: "workers > 0 on DataLoader makes training unreasonably slow" (a
dataset held in memory trains much slower with worker processes than
without; the answer: workers pay off when loading does real work, not for
tensors already in memory),
https://github.com/Lightning-AI/pytorch-lightning/issues/17410

Problem: the features are a ``TensorDataset`` already in RAM and each
sample costs one index, but the DataLoader uses two worker processes, so
every batch is gathered in a worker, sent through shared memory and a
queue, and rebuilt in the training process: inter-process overhead larger
than the work it moves.
Expected fix: ``num_workers=0`` for in-memory tensors (or index whole
batches straight from the tensors).
"""
import sys
import time

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


def main(steps=150):
    torch.manual_seed(0)
    data = TensorDataset(torch.randn(20000, 32), torch.randint(0, 4, (20000,)))
    model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 4))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    loader = DataLoader(data, batch_size=64, shuffle=True, num_workers=0)
    times = []
    while len(times) < steps:
        t0 = time.perf_counter()
        for x, y in loader:
            loss = F.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            times.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            if len(times) == steps:
                break
    t = sorted(times[5:])
    print(f"median step time: {t[len(t) // 2] * 1e3:.2f} ms over {len(t)} steps")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 150)
