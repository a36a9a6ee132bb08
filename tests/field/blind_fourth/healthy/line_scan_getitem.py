"""Healthy twin of problems/line_scan_getitem.py: the line offsets are recorded
once and ``__getitem__`` seeks to its line.

The problem it fixes: ``__getitem__`` reads the data file from the start up to
the requested line.
"""
import os
import sys
import tempfile
import time

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, Dataset

STEPS = 40
N_LINES = 20000


class LineDataset(Dataset):
    def __init__(self, path, n):
        self.path = path
        self.offsets = []
        with open(path, "rb") as f:
            pos = 0
            for line in f:
                self.offsets.append(pos)
                pos += len(line)
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        with open(self.path, "rb") as f:
            f.seek(self.offsets[i])
            line = f.readline().decode()
        *features, label = line.split(",")
        return torch.tensor([float(v) for v in features]), int(label)


def write_data(path):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(N_LINES, 16, generator=g)
    with open(path, "w") as f:
        for row in x.tolist():
            f.write(",".join(f"{v:.4f}" for v in row) + f",{int(row[0] > 0)}\n")


def main(steps=STEPS):
    torch.manual_seed(0)
    path = os.path.join(tempfile.mkdtemp(), "samples.csv")
    write_data(path)
    loader = DataLoader(LineDataset(path, N_LINES), batch_size=32, shuffle=True)
    model = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 2))
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
