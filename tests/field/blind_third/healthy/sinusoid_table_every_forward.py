"""Healthy twin of problems/sinusoid_table_every_forward.py: the table is built once and kept as a buffer.

The problem it fixes: A constant sinusoidal position table rebuilt in Python on every forward pass.

Thread: "embedding of positional encoding?" (computing the positional
encoding once at the beginning and retrieving the values during training
is much more efficient than computing it every single minibatch),
https://github.com/jadore801120/attention-is-all-you-need-pytorch/issues/33

Problem: the encoder's ``forward`` calls ``sinusoid_table(n, d)``, which
fills a (positions x dim) table with nested Python list comprehensions
(``pos / 10000 ** (2 * (i // 2) / d)`` per element) and converts it to a
tensor, every step, although the table never changes.
Expected fix: build the table once in ``__init__`` and keep it with
``self.register_buffer("pos", table)`` (or ``nn.Embedding.from_pretrained(
table, freeze=True)``), slicing ``[:n]`` in ``forward``.
"""
import math
import sys
import time

import torch
import torch.nn.functional as F
from torch import nn


def sinusoid_table(n_position, d):
    angle = [[pos / math.pow(10000, 2 * (i // 2) / d) for i in range(d)] for pos in range(n_position)]
    table = [[math.sin(a) if i % 2 == 0 else math.cos(a) for i, a in enumerate(row)] for row in angle]
    return torch.tensor(table)


class Encoder(nn.Module):
    def __init__(self, vocab=1000, d=128):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.layer = nn.TransformerEncoderLayer(d, 4, 128, batch_first=True)
        self.head = nn.Linear(d, 2)
        self.register_buffer("pos", sinusoid_table(512, d))

    def forward(self, tokens):
        h = self.emb(tokens) + self.pos[:tokens.shape[1]]
        return self.head(self.layer(h).mean(1))


def main(steps=60):
    torch.manual_seed(0)
    model = Encoder()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    times = []
    for step in range(steps):
        t0 = time.perf_counter()
        tokens = torch.randint(0, 1000, (2, 128))
        y = (tokens[:, 0] > 500).long()
        loss = F.cross_entropy(model(tokens), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        times.append(time.perf_counter() - t0)
    t = sorted(times[5:])
    print(f"median step time: {t[len(t) // 2] * 1e3:.2f} ms over {len(t)} steps")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 60)
