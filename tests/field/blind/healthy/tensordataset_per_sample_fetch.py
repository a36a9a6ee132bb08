"""Healthy twin of problems/tensordataset_per_sample_fetch.py: each batch is indexed at once through a BatchSampler.

The problem it fixes: An in-memory TensorDataset fetched one sample at a time and re-stacked.

Thread: "Batch Dataloaders on Pytorch" (tabular data in memory: a DataLoader
calling ``__getitem__`` per index is "an order of magnitude" slower than
indexing the whole batch), https://maxwellrules.com/data/batch_dataloaders.html

Problem: the whole table is already one tensor, yet the DataLoader indexes it
1024 times per batch and ``default_collate`` stacks the rows again.
Expected fix: index the whole batch at once, e.g. pass a ``BatchSampler`` as
the sampler with ``batch_size=None`` (TensorDataset accepts a list of
indices), or slice a shuffled permutation directly.
"""
import sys
import time

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import BatchSampler, DataLoader, RandomSampler, TensorDataset


def make_loader(dataset):
    batches = BatchSampler(RandomSampler(dataset), batch_size=1024, drop_last=False)
    return DataLoader(dataset, sampler=batches, batch_size=None)


def main(steps=80):
    torch.manual_seed(0)
    x = torch.randn(200_000, 24)
    y = (x[:, :3].sum(1) > 0).float()
    model = nn.Sequential(nn.Linear(24, 64), nn.ReLU(), nn.Linear(64, 1))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    loader = make_loader(TensorDataset(x, y))
    times, done = [], 0
    while done < steps:
        t0 = time.perf_counter()
        for xb, yb in loader:
            loss = F.binary_cross_entropy_with_logits(model(xb).squeeze(1), yb)
            opt.zero_grad()
            loss.backward()
            opt.step()
            t1 = time.perf_counter()
            times.append(t1 - t0)
            t0 = t1
            done += 1
            if done >= steps:
                break
    t = sorted(times[5:])
    print(f"median step time: {t[len(t) // 2] * 1e3:.2f} ms over {len(t)} steps")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 80)
