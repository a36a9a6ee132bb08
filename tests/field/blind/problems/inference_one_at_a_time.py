"""Offline scoring that feeds the model one sample per call.

Thread: "Batching Question" (the same Linear layer over 10,000 vectors one at
a time is ~77 times slower than one batched call, even on CPU),
https://discuss.pytorch.org/t/batching-question/102632

Problem: a dataset is scored with ``DataLoader(batch_size=1)`` so every
forward call carries one row and pays the full per-call overhead.
Expected fix: batch the inputs (``batch_size=256``), with
``torch.inference_mode()`` kept as is.
"""
import sys
import time

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

BATCH = 1


def main(rows=25600):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 2))
    model.eval()
    loader = DataLoader(TensorDataset(torch.randn(rows, 64)), batch_size=BATCH)
    scores, times, counts = [], [], []
    with torch.inference_mode():
        t0 = time.perf_counter()
        for (x,) in loader:
            scores.append(model(x).softmax(-1)[:, 1])
            t1 = time.perf_counter()
            times.append(t1 - t0)
            counts.append(len(x))
            t0 = t1
    per_row = sum(times[5:]) / sum(counts[5:])
    t = sorted(times[5:])
    print(f"median step time: {t[len(t) // 2] * 1e3:.3f} ms over {len(t)} steps")
    print(f"time per row: {per_row * 1e6:.1f} us over {sum(counts)} rows")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 25600)
