"""A language model trained with a full softmax over a large, Zipf-distributed vocabulary.

Thread: "Implement Adaptive softmax in PyText" (integrating PyTorch's
``AdaptiveLogSoftmaxWithLoss`` as the output layer for efficient language
model training instead of the full softmax output layer),
https://github.com/facebookresearch/pytext/pull/609

Problem: the output layer projects every position onto all 20,000 words and
normalises over all of them (``nn.Linear(hidden, vocab)`` + cross-entropy),
although most target words are among the few thousand most frequent ones;
the (tokens x vocabulary) logits dominate every step, forward and backward.
Expected fix: ``nn.AdaptiveLogSoftmaxWithLoss`` with cutoffs on the word
frequency ranks (frequent words in a small head, rare words in smaller
tail clusters), or a sampled softmax.
"""
import sys
import time

import torch
import torch.nn.functional as F
from torch import nn

VOCAB = 20000


class LM(nn.Module):
    def __init__(self, hidden=128):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, hidden)
        self.rnn = nn.GRU(hidden, hidden, batch_first=True)
        self.out = nn.Linear(hidden, VOCAB)

    def loss(self, tokens, targets):
        h, _ = self.rnn(self.emb(tokens))
        return F.cross_entropy(self.out(h).reshape(-1, VOCAB), targets.reshape(-1))


def zipf_tokens(shape):
    ranks = torch.arange(1, VOCAB + 1, dtype=torch.float)
    return torch.multinomial(1.0 / ranks, shape[0] * shape[1], replacement=True).view(shape)


def main(steps=40):
    torch.manual_seed(0)
    model = LM()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    times = []
    for step in range(steps):
        t0 = time.perf_counter()
        seq = zipf_tokens((16, 33))
        loss = model.loss(seq[:, :-1], seq[:, 1:])
        opt.zero_grad()
        loss.backward()
        opt.step()
        times.append(time.perf_counter() - t0)
    t = sorted(times[5:])
    print(f"median step time: {t[len(t) // 2] * 1e3:.2f} ms over {len(t)} steps")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 40)
