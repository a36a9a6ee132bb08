"""A Dataset that converts its float64 NumPy rows to float32 tensors in every ``__getitem__``.

Thread: "Perf: DataLoader 张量缓存 — __getitem__ 预转换张量加速" (DataLoader
tensor cache: every ``__getitem__`` called ``torch.tensor()`` on NumPy
rows, repeating the conversion throughout training; converting the arrays
to float32 tensors once and indexing the cached tensors made 10,000
``__getitem__`` calls about 25 times faster),
https://github.com/zjuwss/gnnwr/pull/22

Problem: the dataset keeps its distance, feature and target arrays as
float64 NumPy arrays and returns ``torch.tensor(self.distances[i],
dtype=torch.float)`` (and the same for the features and the target) for
each sample, so every sample of every epoch pays three NumPy-to-tensor
copies with a dtype conversion in the training process.
Expected fix: convert each array once in ``__init__`` (``torch.from_numpy(
a).float()``) and index the cached tensors in ``__getitem__``.
"""
import sys
import time

import numpy as np
import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset


class SpatialData(Dataset):
    def __init__(self, n=4000, refs=256):
        rng = np.random.default_rng(0)
        points = rng.random((n, 2))
        anchors = rng.random((refs, 2))
        self.distances = np.linalg.norm(points[:, None] - anchors[None], axis=-1)
        self.x = rng.standard_normal((n, 8))
        self.y = (self.x[:, :1] * self.distances[:, :1]).astype(np.float64)

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return (torch.tensor(self.distances[i], dtype=torch.float),
                torch.tensor(self.x[i], dtype=torch.float),
                torch.tensor(self.y[i], dtype=torch.float))


class GWR(nn.Module):
    def __init__(self, refs=256):
        super().__init__()
        self.weights = nn.Sequential(nn.Linear(refs, 32), nn.ReLU(), nn.Linear(32, 8))

    def forward(self, d, x):
        return (self.weights(d) * x).sum(-1, keepdim=True)


def main(steps=100):
    torch.manual_seed(0)
    model = GWR()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    loader = DataLoader(SpatialData(), batch_size=128, shuffle=True)
    times = []
    while len(times) < steps:
        t0 = time.perf_counter()
        for d, x, y in loader:
            loss = (model(d, x) - y).pow(2).mean()
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
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 100)
