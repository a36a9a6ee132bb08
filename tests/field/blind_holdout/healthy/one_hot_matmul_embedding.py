"""Healthy twin of problems/one_hot_matmul_embedding.py: item ids go through ``nn.Embedding``.

The problem it fixes: Item ids fed as one-hot vectors through a Linear layer instead of an embedding.

Thread: "Have you try replace the one-hot input by a embedding layer?" (a
session-based recommender takes one-hot item vectors; "using one-hot
representation is much slower at training" than an embedding layer),
https://github.com/yhs968/pyGRU4REC/issues/4

Problem: each batch of item ids is expanded with ``F.one_hot`` to a
(64, 20000) float matrix and multiplied by an ``nn.Linear(20000, 64)``, so
every step does a dense 20000-wide matmul forward and a dense 20000x64 weight
gradient backward to select 64 rows.
Expected fix: index the rows directly with ``nn.Embedding(20000, 64)`` (an
embedding lookup, optionally ``sparse=True``), feeding the ids instead of
one-hot vectors.
"""
import sys
import time

import torch
import torch.nn.functional as F
from torch import nn

ITEMS = 20000


class NextCategory(nn.Module):
    def __init__(self):
        super().__init__()
        self.items = nn.Embedding(ITEMS, 64)
        self.gru = nn.GRUCell(64, 64)
        self.head = nn.Linear(64, 50)

    def forward(self, session):
        h = torch.zeros(session.shape[0], 64)
        for t in range(session.shape[1]):
            x = self.items(session[:, t])
            h = self.gru(x, h)
        return self.head(h)


def main(steps=60):
    torch.manual_seed(0)
    model = NextCategory()
    opt = torch.optim.Adagrad(model.parameters(), lr=0.05)
    times = []
    for step in range(steps):
        t0 = time.perf_counter()
        session = torch.randint(0, ITEMS, (64, 5))
        y = session[:, -1] % 50
        loss = F.cross_entropy(model(session), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        times.append(time.perf_counter() - t0)
    t = sorted(times[5:])
    print(f"median step time: {t[len(t) // 2] * 1e3:.2f} ms over {len(t)} steps")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 60)
