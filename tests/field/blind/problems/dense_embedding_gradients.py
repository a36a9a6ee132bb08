"""A large embedding table trained with dense gradients and dense Adam.

Thread: "Sparse Embedding Layer" (a standard ``nn.Embedding`` gives every
row of the table a gradient, even rows the batch never used; ``sparse=True``
keeps only the used rows), https://cheesebytes.com/cave/sparse-embedding-layer

Problem: a recommender's 200,000-row item table gets a dense gradient each
step and Adam updates all rows and both moment buffers, although a batch
touches a few thousand rows.
Expected fix: ``nn.EmbeddingBag(..., sparse=True)`` with
``torch.optim.SparseAdam`` for the table (dense Adam for the rest).
"""
import sys
import time

import torch
import torch.nn.functional as F
from torch import nn

SPARSE = False


class Recommender(nn.Module):
    def __init__(self, items=200_000, d=32):
        super().__init__()
        self.items = nn.EmbeddingBag(items, d, mode="mean", sparse=SPARSE)
        self.head = nn.Sequential(nn.Linear(d, 64), nn.ReLU(), nn.Linear(64, 1))

    def forward(self, history):
        return self.head(self.items(history)).squeeze(1)


def optimizers(model):
    if SPARSE:
        return [torch.optim.SparseAdam(model.items.parameters(), lr=1e-3),
                torch.optim.Adam(model.head.parameters(), lr=1e-3)]
    return [torch.optim.Adam(model.parameters(), lr=1e-3)]


def main(steps=80):
    torch.manual_seed(0)
    model = Recommender()
    opts = optimizers(model)
    times = []
    for step in range(steps):
        t0 = time.perf_counter()
        history = torch.randint(0, 200_000, (128, 20))
        clicked = (history[:, 0] % 3 == 0).float()
        loss = F.binary_cross_entropy_with_logits(model(history), clicked)
        for opt in opts:
            opt.zero_grad()
        loss.backward()
        for opt in opts:
            opt.step()
        times.append(time.perf_counter() - t0)
    t = sorted(times[5:])
    print(f"median step time: {t[len(t) // 2] * 1e3:.2f} ms over {len(t)} steps")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 80)
