"""Embedding rows gathered by indexing with Python lists of ints every step.

Thread: "Indexing into tensor order of magnitude slower than numpy",
https://github.com/pytorch/pytorch/issues/29973

Problem: the graph model keeps each batch's sampled neighbour ids as Python
lists and gathers their rows with ``self.table[neighbours]``; indexing with a
list makes PyTorch convert the 16,384 Python ints into an index tensor
(checking each element's type) on every forward call.
Expected fix: store the ids as ``torch.long`` tensors once
(``torch.tensor(ids)`` when the data is built) and index with the tensor (or
``index_select``/``nn.Embedding``).
"""
import random
import sys
import time

import torch
import torch.nn.functional as F
from torch import nn

STEPS = 80
N_NODES = 50000


class NeighbourMean(nn.Module):
    def __init__(self, n, dim):
        super().__init__()
        self.table = nn.Parameter(torch.randn(n, dim) * 0.1)
        self.head = nn.Linear(dim, 2)

    def forward(self, neighbours):
        rows = self.table[neighbours]
        return self.head(rows.view(256, 64, -1).mean(1))


def sample(rng):
    return [rng.randrange(N_NODES) for _ in range(256 * 64)]


def main(steps=STEPS):
    torch.manual_seed(0)
    rng = random.Random(0)
    batches = [sample(rng) for _ in range(8)]
    model = NeighbourMean(N_NODES, 16)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    times = []
    for step in range(steps):
        t0 = time.perf_counter()
        y = torch.randint(0, 2, (256,))
        loss = F.cross_entropy(model(batches[step % 8]), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        times.append(time.perf_counter() - t0)

    t = sorted(times[5:])
    print(f"median step time: {t[len(t) // 2] * 1e3:.2f} ms over {len(t)} steps")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else STEPS)
