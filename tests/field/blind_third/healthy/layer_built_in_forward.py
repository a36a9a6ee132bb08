"""Healthy twin of problems/layer_built_in_forward.py: the head is created once in ``__init__``.

The problem it fixes: A classification head constructed inside ``forward`` at every call.

Thread: "Why repeat initializing loss modules in every forward?" (answer
from the maintainers: a weightless module such as ``nn.CrossEntropyLoss``
costs nothing to build per call, but doing this with ``nn.Linear(...)`` at
every forward step is bad practice, since a big weight tensor is allocated
at every step),
https://github.com/huggingface/transformers/issues/13191

Problem: the model's ``forward`` ends with ``nn.Linear(2048, 1000)(h)``, so
every step allocates and randomly initialises (Kaiming-uniform) a fresh
2-million-weight layer, computes a gradient for it, and throws it away;
the head is never trained either.
Expected fix: create the head once in ``__init__`` (``self.head =
nn.Linear(2048, 1000)``) and only call it in ``forward``.
"""
import sys
import time

import torch
import torch.nn.functional as F
from torch import nn


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(64, 2048), nn.ReLU())
        self.head = nn.Linear(2048, 1000)

    def forward(self, x):
        h = self.body(x)
        return self.head(h)


def main(steps=60):
    torch.manual_seed(0)
    model = Classifier()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    times = []
    for step in range(steps):
        t0 = time.perf_counter()
        x = torch.randn(4, 64)
        y = torch.randint(0, 1000, (4,))
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        times.append(time.perf_counter() - t0)
    t = sorted(times[5:])
    print(f"median step time: {t[len(t) // 2] * 1e3:.2f} ms over {len(t)} steps")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 60)
