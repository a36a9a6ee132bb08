"""``__getitem__`` loads the whole data file again for every sample.

Thread: "pytorch dataloader 读取 HDF5 格式数据" (open the file once and reuse the
handle instead of reading it in every ``__getitem__`` call),
https://haomeiwen.com/subject/qhvuwltx.html

Problem: the dataset keeps only the path and calls ``np.load(path)`` inside
``__getitem__``, so each sample reads and parses the whole array file.
Expected fix: open the file once (``np.load(path, mmap_mode="r")`` in
``__init__``, or cache the handle) and index it per sample.
"""
import os
import sys
import tempfile
import time

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, Dataset


class Features(Dataset):
    def __init__(self, path, labels):
        self.path = path
        self.labels = labels

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        x = np.load(self.path)[i]
        return torch.from_numpy(np.array(x)), int(self.labels[i])


def main(steps=80):
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    data = rng.standard_normal((8192, 96)).astype(np.float32)
    labels = (data[:, 0] > 0).astype(np.int64)
    model = nn.Sequential(nn.Linear(96, 128), nn.ReLU(), nn.Linear(128, 2))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    times, done = [], 0
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "features.npy")
        np.save(path, data)
        loader = DataLoader(Features(path, labels), batch_size=32, shuffle=True)
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
