"""Per-sample output tensors pickled to a cache file at every step.

Thread: "Pickling tensors is much much slower than numpy arrays",
https://discuss.pytorch.org/t/pickling-tensors-is-much-much-slower-than-numpy-arrays/159977

Problem: after each step the script appends the batch's embeddings to an
on-disk cache with ``pickle.dump(list(emb.detach()), f)``: a list of 256 small
tensors, each pickled through the tensor's own reduction (storage, dtype, shape
and strides as separate Python objects), some twenty times slower than the same
numbers as one array.
Expected fix: pickle one array per batch (``emb.detach().numpy()``), or
``torch.save`` the batch tensor, or write the cache once at the end.
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
            pickle.dump(list(emb.detach()), cache)
            times.append(time.perf_counter() - t0)

    t = sorted(times[5:])
    print(f"median step time: {t[len(t) // 2] * 1e3:.2f} ms over {len(t)} steps")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else STEPS)
