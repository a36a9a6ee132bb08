"""Self-attention written out as ``softmax(q @ k.T / sqrt(d)) @ v``.

Thread: "Dot-product attention",
https://github.com/broadinstitute/CellCap/issues/33

Problem: the attention layer computes ``torch.softmax(q @ k.transpose(-2, -1) /
d ** 0.5, -1) @ v`` by hand: three separate operators that materialise the
(batch, heads, 256, 256) score and probability matrices forward and keep them
for backward, where the fused ``scaled_dot_product_attention`` kernel works
block by block.
Expected fix: call ``F.scaled_dot_product_attention(q, k, v)``.
"""
import sys
import time

import torch
import torch.nn.functional as F
from torch import nn

STEPS = 40


class SelfAttention(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads, self.d = heads, dim // heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        b, n, _ = x.shape
        q, k, v = self.qkv(x).view(b, n, 3, self.heads, self.d).permute(2, 0, 3, 1, 4)
        att = torch.softmax(q @ k.transpose(-2, -1) / self.d ** 0.5, dim=-1)
        out = att @ v
        return x + self.proj(out.transpose(1, 2).reshape(b, n, -1))


def main(steps=STEPS):
    torch.manual_seed(0)
    model = nn.Sequential(SelfAttention(64, 4), nn.LayerNorm(64), SelfAttention(64, 4))
    head = nn.Linear(64, 10)
    opt = torch.optim.SGD([*model.parameters(), *head.parameters()], lr=0.01)
    times = []
    for _ in range(steps):
        t0 = time.perf_counter()
        x = torch.randn(8, 256, 64)
        y = torch.randint(0, 10, (8,))
        loss = F.cross_entropy(head(model(x).mean(1)), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        times.append(time.perf_counter() - t0)

    t = sorted(times[5:])
    print(f"median step time: {t[len(t) // 2] * 1e3:.2f} ms over {len(t)} steps")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else STEPS)
