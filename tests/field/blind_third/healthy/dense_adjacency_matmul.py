"""Healthy twin of problems/dense_adjacency_matmul.py: the adjacency is a sparse tensor multiplied with ``torch.sparse.mm``.

The problem it fixes: A graph convolution multiplying node features by a dense adjacency matrix.

Thread: "why need sparse block diagonal adjacency matrices at all" (the
answer: a dense adjacency matrix makes the computational complexity much
higher; the sparse one keeps it proportional to the edges),
https://github.com/tkipf/gcn/issues/105

Problem: a two-layer GCN stores its normalised adjacency (3,000 nodes,
about 8 edges each, 0.3% non-zero) as a dense 3000x3000 tensor and
multiplies it with ``adj @ h`` in every layer, forward and backward:
9 million multiply-adds per feature column where 24 thousand would do.
Expected fix: keep the adjacency sparse (``adj.to_sparse()``, or build it
with ``torch.sparse_coo_tensor``) and propagate with ``torch.sparse.mm``.
"""
import sys
import time

import torch
import torch.nn.functional as F
from torch import nn


def normalised_adjacency(n=3000, degree=8):
    g = torch.Generator().manual_seed(0)
    src = torch.arange(n).repeat_interleave(degree)
    dst = torch.randint(0, n, (n * degree,), generator=g)
    adj = torch.zeros(n, n)
    adj[src, dst] = 1.0
    adj = ((adj + adj.T) > 0).float() + torch.eye(n)
    d = adj.sum(1).rsqrt()
    return d[:, None] * adj * d[None, :]


class GCN(nn.Module):
    def __init__(self, adj):
        super().__init__()
        self.adj = adj.to_sparse()
        self.l1 = nn.Linear(32, 64)
        self.l2 = nn.Linear(64, 7)

    def forward(self, x):
        h = F.relu(torch.sparse.mm(self.adj, self.l1(x)))
        return torch.sparse.mm(self.adj, self.l2(h))


def main(steps=40):
    torch.manual_seed(0)
    adj = normalised_adjacency()
    x = torch.randn(adj.shape[0], 32)
    y = torch.randint(0, 7, (adj.shape[0],))
    model = GCN(adj)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    times = []
    for step in range(steps):
        t0 = time.perf_counter()
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        times.append(time.perf_counter() - t0)
    t = sorted(times[5:])
    print(f"median step time: {t[len(t) // 2] * 1e3:.2f} ms over {len(t)} steps")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 40)
