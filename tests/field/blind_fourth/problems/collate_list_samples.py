"""Samples returned as Python lists, which ``default_collate`` transposes into one
tensor per feature.

Thread: "default_collate: if elem in batch is list, the whole batch would be
transpose?", https://github.com/pytorch/pytorch/issues/50272

Problem: ``__getitem__`` returns each sample's 128 features as a Python list
(``self.rows[i]`` of a list-of-lists table); ``default_collate`` treats a list
as a sequence of fields and builds 128 separate tensors of batch length, one
per feature, by walking the batch in Python, and the training loop then
re-assembles them with ``torch.stack(xs, dim=1)``.
Expected fix: keep the table as one tensor (or ``ndarray``) and return
``self.x[i]`` (a tensor row), so the batch is collated with a single
``torch.stack``.
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
        self.rows = rows
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
        x = torch.stack(xs, dim=1)
        loss = F.cross_entropy(model(x.float()), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        times.append(time.perf_counter() - t0)

    t = sorted(times[5:])
    print(f"median step time: {t[len(t) // 2] * 1e3:.2f} ms over {len(t)} steps")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else STEPS)
