"""A collate function that pads token lists with nested Python loops.

Thread: "Usage of collate_fn" (padding and alignment done with Python for
loops over the tokens takes far longer than the RNN and linear layers it
feeds),
https://github.com/flairNLP/flair/issues/889

Problem: samples are Python lists of token ids; ``collate`` pads them to the
batch's longest sequence element by element in a nested list comprehension
and converts the padded nested list with ``torch.tensor``, so every batch
pays thousands of Python-level operations before the model runs.
Expected fix: turn each sample into a tensor once and pad the batch with
``torch.nn.utils.rnn.pad_sequence`` (one call, no Python loop over tokens).
"""
import random
import sys
import time

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader

VOCAB = 5000


def make_corpus(n=2048):
    rng = random.Random(0)
    return [([rng.randrange(1, VOCAB) for _ in range(rng.randint(40, 300))], rng.randrange(4))
            for _ in range(n)]


def collate(batch):
    longest = max(len(tokens) for tokens, _ in batch)
    padded = [[tokens[i] if i < len(tokens) else 0 for i in range(longest)] for tokens, _ in batch]
    return torch.tensor(padded), torch.tensor([label for _, label in batch])


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, 32, padding_idx=0)
        self.head = nn.Linear(32, 4)

    def forward(self, x):
        return self.head(self.emb(x).mean(1))


def main(steps=100):
    torch.manual_seed(0)
    model = Classifier()
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    loader = DataLoader(make_corpus(), batch_size=64, shuffle=True, collate_fn=collate)
    times = []
    while len(times) < steps:
        t0 = time.perf_counter()
        for x, y in loader:
            loss = F.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            times.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            if len(times) == steps:
                break
    t = sorted(times[5:])
    print(f"median step time: {t[len(t) // 2] * 1e3:.2f} ms over {len(t)} steps")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 100)
