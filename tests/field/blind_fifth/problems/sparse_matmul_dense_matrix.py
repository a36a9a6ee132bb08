"""A graph whose adjacency is 28% non-zero propagated with sparse COO matrix
products.

Thread: "Sparse matrix ops appear slower than dense ops",
https://github.com/rusty1s/pytorch_sparse/issues/81

Problem: a graph convolution stores its normalised adjacency (1500 nodes, about
28% of the entries non-zero) as a ``torch.sparse_coo_tensor`` and multiplies
with ``torch.sparse.mm`` in every layer, forward and backward. At this density
the sparse kernel does scattered, index-driven work on about 625,000 entries, while a
dense matrix product of the same size runs as one blocked BLAS call; sparse
formats only pay off at very low densities.
Expected fix: keep a matrix this dense as a dense tensor and use ``adj @ h``
(or ``adj.to_dense()`` once, outside the loop).
"""
import sys
import time

import torch
import torch.nn.functional as F
from torch import nn

STEPS = 40
NODES = 1500


class GCN(nn.Module):
    def __init__(self, dim, hidden, classes):
        super().__init__()
        self.l1 = nn.Linear(dim, hidden)
        self.l2 = nn.Linear(hidden, classes)

    def forward(self, adj, x):
        h = torch.relu(torch.sparse.mm(adj, self.l1(x)))
        return torch.sparse.mm(adj, self.l2(h))


def build_adjacency():
    a = (torch.rand(NODES, NODES) < 0.15).float()
    a = ((a + a.T) > 0).float() + torch.eye(NODES)
    d = a.sum(1).rsqrt()
    return (d[:, None] * a * d[None, :]).to_sparse()


def main(steps=STEPS):
    torch.manual_seed(0)
    adj = build_adjacency()
    x = torch.randn(NODES, 64)
    y = torch.randint(0, 7, (NODES,))
    model = GCN(64, 64, 7)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    times = []
    for _ in range(steps):
        t0 = time.perf_counter()
        loss = F.cross_entropy(model(adj, x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        times.append(time.perf_counter() - t0)

    t = sorted(times[5:])
    print(f"median step time: {t[len(t) // 2] * 1e3:.2f} ms over {len(t)} steps")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else STEPS)
