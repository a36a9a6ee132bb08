"""``nn.MultiheadAttention`` called with the default ``need_weights=True`` and the
weights thrown away.

Thread: "nn.MultiheadAttention is called with the default need_weights=True,
which disables the fused attention kernel",
https://github.com/lyuwenyu/RT-DETR/issues/678

Problem: the encoder block calls ``out, _ = self.attn(x, x, x)``; with the
default ``need_weights=True`` the module cannot use the fused
``scaled_dot_product_attention`` kernel, so it runs separate matrix products
and a softmax, materialises the (batch, heads, 256, 256) attention matrix and
averages it over heads, only for the caller to discard it.
Expected fix: pass ``need_weights=False`` when the attention weights are not
used.
"""
import sys
import time

import torch
import torch.nn.functional as F
from torch import nn

STEPS = 40


class Block(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.attn = nn.MultiheadAttention(dim, heads, batch_first=True)
        self.norm = nn.LayerNorm(dim)
        self.ff = nn.Sequential(nn.Linear(dim, 2 * dim), nn.GELU(), nn.Linear(2 * dim, dim))

    def forward(self, x):
        out, _ = self.attn(x, x, x)
        x = self.norm(x + out)
        return x + self.ff(x)


def main(steps=STEPS):
    torch.manual_seed(0)
    model = nn.Sequential(Block(64, 4), Block(64, 4))
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
