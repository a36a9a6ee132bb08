"""Healthy twin of problems/embedding_then_mean.py: the encoder is an
``nn.EmbeddingBag(mode="mean")``.

The problem it fixes: A bag-of-words encoder that looks up every token with
``nn.Embedding`` and then averages.
"""
import sys
import time

import torch
import torch.nn.functional as F
from torch import nn

STEPS = 60


class BagOfWords(nn.Module):
    def __init__(self, vocab, dim):
        super().__init__()
        self.emb = nn.EmbeddingBag(vocab, dim, mode="mean")
        self.head = nn.Linear(dim, 4)

    def forward(self, tokens):
        return self.head(self.emb(tokens))


def main(steps=STEPS):
    torch.manual_seed(0)
    model = BagOfWords(50000, 64)
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    times = []
    for _ in range(steps):
        t0 = time.perf_counter()
        tokens = torch.randint(0, 50000, (256, 200))
        y = torch.randint(0, 4, (256,))
        loss = F.cross_entropy(model(tokens), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        times.append(time.perf_counter() - t0)

    t = sorted(times[5:])
    print(f"median step time: {t[len(t) // 2] * 1e3:.2f} ms over {len(t)} steps")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else STEPS)
