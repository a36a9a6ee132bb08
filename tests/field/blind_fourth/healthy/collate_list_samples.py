"""Healthy twin of problems/collate_list_samples.py: the table is one tensor and
each sample is a tensor row.

The problem it fixes: Samples returned as Python lists, which
``default_collate`` transposes into one tensor per feature.
"""
import sys
import time

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, Dataset

STEPS = 60


class Rows(Dataset):
    def __init__(self, rows, labels):
        self.rows = torch.tensor(rows)
        self.labels = labels

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        return self.rows[i], self.labels[i]


def main(steps=STEPS):
    torch.manual_seed(0)
    table = torch.randn(8192, 128)
    rows, labels = table.tolist(), (table[:, 0] > 0).long().tolist()
    loader = DataLoader(Rows(rows, labels), batch_size=128, shuffle=True, drop_last=True)
    model = nn.Sequential(nn.Linear(128, 64), nn.ReLU(), nn.Linear(64, 2))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    times = []
    it = iter(loader)
    for _ in range(steps):
        t0 = time.perf_counter()
        xs, y = next(it)
        x = xs
        loss = F.cross_entropy(model(x.float()), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        times.append(time.perf_counter() - t0)

    t = sorted(times[5:])
    print(f"median step time: {t[len(t) // 2] * 1e3:.2f} ms over {len(t)} steps")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else STEPS)
