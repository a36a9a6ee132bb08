"""Per-head linear layers of a ModuleList applied one by one in a Python loop.

Thread: "How to calculate multiple linear layer in one pass" (each of h
heads goes through its own linear layer in a Python loop; the answer stores
one weight of shape (n_head, out, in) and does a single batched matrix
multiply),
https://discuss.pytorch.org/t/how-to-calculate-multiple-linear-layer-in-one-pass/108115

Problem: the model splits its features into 64 heads and applies
``self.heads[h]`` (an ``nn.Linear``) to each head in a Python loop, so every
step runs 64 tiny matrix multiplies forward and 128 backward plus a stack.
Expected fix: keep one weight of shape (heads, out, in) and apply all heads
at once with ``torch.einsum``/``torch.bmm`` (a batched matmul).
"""
import sys
import time

import torch
import torch.nn.functional as F
from torch import nn

HEADS, DIM, OUT = 64, 32, 32


class MultiHead(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(128, HEADS * DIM)
        self.heads = nn.ModuleList(nn.Linear(DIM, OUT) for _ in range(HEADS))
        self.out = nn.Linear(HEADS * OUT, 10)

    def forward(self, x):
        y = self.proj(x).view(len(x), HEADS, DIM).relu()
        z = torch.stack([head(y[:, h]) for h, head in enumerate(self.heads)], dim=1)
        return self.out(z.relu().flatten(1))


def main(steps=100):
    torch.manual_seed(0)
    model = MultiHead()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    times = []
    for step in range(steps):
        t0 = time.perf_counter()
        x = torch.randn(128, 128)
        y = torch.randint(0, 10, (128,))
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        times.append(time.perf_counter() - t0)
    t = sorted(times[5:])
    print(f"median step time: {t[len(t) // 2] * 1e3:.2f} ms over {len(t)} steps")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 100)
