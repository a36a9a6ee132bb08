"""Healthy twin of problems/pickle_tensor_list_each_step.py: each batch is pickled
as one NumPy array.

The problem it fixes: Per-sample output tensors pickled to a cache file at
every step.
"""
import os
import pickle
import sys
import tempfile
import time

import torch
import torch.nn.functional as F
from torch import nn

STEPS = 60


def main(steps=STEPS):
    torch.manual_seed(0)
    encoder = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 32))
    head = nn.Linear(32, 10)
    opt = torch.optim.SGD([*encoder.parameters(), *head.parameters()], lr=0.05)
    path = os.path.join(tempfile.mkdtemp(), "embeddings.pkl")
    times = []
    with open(path, "wb") as cache:
        for _ in range(steps):
            t0 = time.perf_counter()
            x = torch.randn(256, 64)
            y = torch.randint(0, 10, (256,))
            emb = encoder(x)
            loss = F.cross_entropy(head(emb), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            pickle.dump(emb.detach().numpy(), cache)
            times.append(time.perf_counter() - t0)

    t = sorted(times[5:])
    print(f"median step time: {t[len(t) // 2] * 1e3:.2f} ms over {len(t)} steps")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else STEPS)
