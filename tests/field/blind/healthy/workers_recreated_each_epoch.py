"""Healthy twin of problems/workers_recreated_each_epoch.py: persistent_workers=True.

The problem it fixes: DataLoader worker processes are started again at every (short) epoch.

Thread: "data loading in each epoch starting is slow!",
https://github.com/open-mmlab/mmpretrain/issues/196 (fix: DataLoader
``persistent_workers=True``)

Problem: the loader uses worker processes but not ``persistent_workers``, and
each epoch is only a few batches long, so every epoch starts by forking
fresh workers and waiting for their first batches.
Expected fix: ``persistent_workers=True`` so workers live across epochs.
"""
import sys
import time

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, Dataset


class Windows(Dataset):
    """Short windows of a synthetic signal, standardised per sample."""

    def __init__(self, n=192):
        g = torch.Generator().manual_seed(0)
        self.signal = torch.randn(n, 4, 256, generator=g)
        self.labels = torch.randint(0, 5, (n,), generator=g)

    def __len__(self):
        return len(self.signal)

    def __getitem__(self, i):
        x = self.signal[i]
        x = (x - x.mean(-1, keepdim=True)) / (x.std(-1, keepdim=True) + 1e-5)
        return x, self.labels[i]


def main(steps=80):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv1d(4, 16, 5, padding=2), nn.ReLU(), nn.AdaptiveAvgPool1d(8),
                          nn.Flatten(), nn.Linear(128, 5))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    loader = DataLoader(Windows(), batch_size=48, shuffle=True, num_workers=2, persistent_workers=True)
    times, done = [], 0
    while done < steps:
        t0 = time.perf_counter()
        for x, y in loader:
            loss = F.cross_entropy(model(x), y)
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
    print(f"mean step time: {sum(t) / len(t) * 1e3:.2f} ms over {len(t)} steps")
    print(f"median step time: {t[len(t) // 2] * 1e3:.2f} ms over {len(t)} steps")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 80)
