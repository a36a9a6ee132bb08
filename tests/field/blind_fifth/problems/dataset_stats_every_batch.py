"""Normalisation statistics of the whole training set recomputed for every batch.

Thread: "Precompute Dataset Mean and Std", https://github.com/bohaohuang/mrs/issues/27

Problem: the batch loader standardises each batch with the feature mean and
standard deviation of the full in-memory training set (400,000 x 32), and it
computes ``data.mean(0)`` and ``data.std(0)`` again inside every call. The
statistics never change, but every step re-reads the whole data set twice to
produce them, which costs far more than the small model's update.
Expected fix: compute the mean and standard deviation once before training
(and store them with the data set), then only apply them to each batch.
"""
import sys
import time

import torch
import torch.nn.functional as F
from torch import nn

STEPS = 40


class Loader:
    def __init__(self, data, labels, batch_size):
        self.data, self.labels, self.batch_size = data, labels, batch_size

    def batch(self):
        idx = torch.randint(0, len(self.data), (self.batch_size,))
        mean, std = self.data.mean(0), self.data.std(0)
        return (self.data[idx] - mean) / std, self.labels[idx]


def main(steps=STEPS):
    torch.manual_seed(0)
    data = torch.randn(400_000, 32) * 3 + 1
    labels = torch.randint(0, 5, (400_000,))
    loader = Loader(data, labels, 256)
    model = nn.Sequential(nn.Linear(32, 128), nn.ReLU(), nn.Linear(128, 5))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    times = []
    for _ in range(steps):
        t0 = time.perf_counter()
        x, y = loader.batch()
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        times.append(time.perf_counter() - t0)

    t = sorted(times[5:])
    print(f"median step time: {t[len(t) // 2] * 1e3:.2f} ms over {len(t)} steps")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else STEPS)
