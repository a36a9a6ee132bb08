"""Healthy twin of problems/tensor_from_list_of_arrays.py: the batch is stacked with np.stack and wrapped with torch.from_numpy.

The problem it fixes: A collate function that builds the batch tensor from a list of ndarrays.

Thread: "Pytorch very slow to convert list of numpy arrays into tensors",
https://github.com/pytorch/pytorch/issues/13918

Problem: samples are NumPy arrays and the custom ``collate_fn`` calls
``torch.tensor(list_of_arrays)``, which walks every element of every array in
Python-level code instead of copying whole buffers.
Expected fix: stack first and wrap the buffer:
``torch.from_numpy(np.stack(list_of_arrays))``.
"""
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, Dataset


class Spectrograms(Dataset):
    def __init__(self, n=2048):
        rng = np.random.default_rng(0)
        self.x = rng.standard_normal((n, 1, 32, 32)).astype(np.float32)
        self.y = rng.integers(0, 8, n)

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return self.x[i], int(self.y[i])


def collate(samples):
    xs, ys = zip(*samples)
    return torch.from_numpy(np.stack(xs)), torch.tensor(ys)


def main(steps=80):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Flatten(), nn.Linear(16 * 16 * 16, 8))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    loader = DataLoader(Spectrograms(), batch_size=64, shuffle=True, collate_fn=collate)
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
    print(f"median step time: {t[len(t) // 2] * 1e3:.2f} ms over {len(t)} steps")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 80)
