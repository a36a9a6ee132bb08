"""A bag-of-words encoder that looks up every token with ``nn.Embedding`` and then
averages.

Thread: "nn.EmbeddingBag to compute a bag of word embeddings (Embedding +
Sum)", https://github.com/pytorch/pytorch/pull/1803

Problem: the text classifier computes ``self.emb(tokens).mean(1)`` for batches
of 256 documents of 200 tokens: the lookup materialises a (256, 200, 64) tensor
of token vectors only to average it away, and the backward pass builds a
gradient of the same size and scatters its 51,200 rows back into the table's
gradient.
Expected fix: use ``nn.EmbeddingBag(vocab, dim, mode="mean")``, which gathers
and reduces each bag in one kernel without the intermediate.
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
        self.emb = nn.Embedding(vocab, dim)
        self.head = nn.Linear(dim, 4)

    def forward(self, tokens):
        return self.head(self.emb(tokens).mean(1))


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
