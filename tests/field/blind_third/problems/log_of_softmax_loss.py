"""A classification loss computed as ``nll_loss(torch.log(softmax(logits)))``.

Thread: "Notebooks updated to pytorch==1.0.0" (review discussion: softmax
involves heavier computation, ``log_softmax`` is very efficiently
implemented; ``log_softmax`` + NLL loss, i.e. ``CrossEntropyLoss`` on the
logits, is the way to go),
https://github.com/rasbt/deep-learning-book/pull/70

Problem: over 10,000 classes the loss runs softmax, then a separate
``torch.log`` over the whole (batch x classes) matrix, then ``nll_loss``:
two extra passes and an extra full-size intermediate forward and backward
(and ``log`` of underflowed probabilities gives ``-inf``).
Expected fix: ``F.cross_entropy(logits, target)`` (fused ``log_softmax`` +
``nll_loss``), or ``F.log_softmax`` followed by ``F.nll_loss``.
"""
import sys
import time

import torch
import torch.nn.functional as F
from torch import nn


def main(steps=60):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 10000))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    times = []
    for step in range(steps):
        t0 = time.perf_counter()
        x = torch.randn(256, 64)
        y = torch.randint(0, 10000, (256,))
        logits = model(x)
        loss = F.nll_loss(torch.log(F.softmax(logits, dim=1)), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        times.append(time.perf_counter() - t0)
    t = sorted(times[5:])
    print(f"median step time: {t[len(t) // 2] * 1e3:.2f} ms over {len(t)} steps")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 60)
