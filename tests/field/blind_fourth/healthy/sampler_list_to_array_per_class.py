"""Healthy twin of problems/sampler_list_to_array_per_class.py: the labels are
converted to an array once, in ``__init__``.

The problem it fixes: A class-balanced batch sampler that converts the label
list to an array for every class it draws.
"""
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, Sampler, TensorDataset

STEPS = 40


class BalancedSampler(Sampler):
    """Batches of `m` samples from each of `batch_size // m` randomly drawn classes."""

    def __init__(self, ys, batch_size, m, n_batches, seed=0):
        self.ys = np.asarray(ys)
        self.classes = sorted(set(ys))
        self.batch_size, self.m, self.n_batches = batch_size, m, n_batches
        self.rng = np.random.default_rng(seed)

    def __len__(self):
        return self.n_batches

    def __iter__(self):
        for _ in range(self.n_batches):
            batch = []
            for c in self.rng.choice(self.classes, self.batch_size // self.m, replace=False):
                members = np.nonzero(self.ys == c)[0]
                batch.extend(self.rng.choice(members, self.m).tolist())
            yield batch


def main(steps=STEPS):
    torch.manual_seed(0)
    n, n_classes = 50000, 500
    labels = torch.randint(0, n_classes, (n,))
    feats = torch.randn(n, 32) + labels[:, None].float() / n_classes
    sampler = BalancedSampler(labels.tolist(), 64, 4, steps)
    loader = DataLoader(TensorDataset(feats, labels), batch_sampler=sampler)
    model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, n_classes))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    times = []
    it = iter(loader)
    for _ in range(steps):
        t0 = time.perf_counter()
        x, y = next(it)
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        times.append(time.perf_counter() - t0)

    t = sorted(times[5:])
    print(f"median step time: {t[len(t) // 2] * 1e3:.2f} ms over {len(t)} steps")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else STEPS)
