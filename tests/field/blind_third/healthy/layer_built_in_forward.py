"""Healthy twin of problems/layer_built_in_forward.py: the output projection and LayerNorm are created once in ``__init__``.

The problem it fixes: An attention block that constructs its output projection and LayerNorm inside ``forward``.

Thread: "If create the Linear() casually, it won't be trained during
training." (the tutorial Transformer's ``MultiHeadAttention.forward`` calls
``nn.Linear(n_heads * d_v, d_model)(context)`` and ``nn.LayerNorm(d_model)``,
creating new layers on every call),
https://github.com/graykode/nlp-tutorial/issues/29

Problem: every forward pass allocates and randomly initialises a fresh
768x768 ``nn.Linear`` (Kaiming-uniform over 590k weights) and a
``LayerNorm`` per attention block, then throws them away: the cost of
building the layers is paid each step, and the layers are never trained.
Expected fix: create the layers once in ``__init__`` (``self.out =
nn.Linear(...)``, ``self.norm = nn.LayerNorm(...)``) and only call them in
``forward``.
"""
import sys
import time

import torch
import torch.nn.functional as F
from torch import nn

D_MODEL, HEADS = 768, 12


class MultiHeadAttention(nn.Module):
    def __init__(self):
        super().__init__()
        self.qkv = nn.Linear(D_MODEL, 3 * D_MODEL)
        self.out = nn.Linear(D_MODEL, D_MODEL)
        self.norm = nn.LayerNorm(D_MODEL)

    def forward(self, x):
        b, n, d = x.shape
        q, k, v = self.qkv(x).view(b, n, 3, HEADS, d // HEADS).permute(2, 0, 3, 1, 4)
        context = F.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(b, n, d)
        return self.norm(self.out(context) + x)


def main(steps=60):
    torch.manual_seed(0)
    model = nn.Sequential(MultiHeadAttention(), MultiHeadAttention())
    head = nn.Linear(D_MODEL, 2)
    opt = torch.optim.Adam([*model.parameters(), *head.parameters()], lr=1e-4)
    times = []
    for step in range(steps):
        t0 = time.perf_counter()
        x = torch.randn(4, 16, D_MODEL)
        y = (x[:, 0, 0] > 0).long()
        loss = F.cross_entropy(head(model(x).mean(1)), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        times.append(time.perf_counter() - t0)
    t = sorted(times[5:])
    print(f"median step time: {t[len(t) // 2] * 1e3:.2f} ms over {len(t)} steps")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 60)
