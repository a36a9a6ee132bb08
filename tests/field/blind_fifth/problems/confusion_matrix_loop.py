"""A confusion matrix updated one sample at a time with indexed increments.

Thread: "edited the computation of ConfusionMatrix for large speedup",
https://github.com/fastai/fastai/pull/2516

Problem: after each training step the running confusion matrix (100 classes)
is updated with ``for i in range(batch_size): cm[targs[i], preds[i]] += 1``.
Every iteration indexes two tensors, builds two 0-d index tensors and performs
an indexed read-modify-write on ``cm``, so a batch of 1,024 costs thousands of
tiny tensor operations, more than the training step itself.
Expected fix: count all pairs at once:
``cm += torch.bincount(targs * n + preds, minlength=n * n).view(n, n)``
(or ``index_put_(..., accumulate=True)``).
"""
import sys
import time

import torch
import torch.nn.functional as F
from torch import nn

STEPS = 40
CLASSES = 100


def update_confusion(cm, preds, targs):
    for i in range(len(targs)):
        cm[targs[i], preds[i]] += 1


def main(steps=STEPS):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, CLASSES))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    cm = torch.zeros(CLASSES, CLASSES, dtype=torch.long)
    times = []
    for _ in range(steps):
        x, y = torch.randn(1024, 64), torch.randint(0, CLASSES, (1024,))
        t0 = time.perf_counter()
        logits = model(x)
        loss = F.cross_entropy(logits, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        update_confusion(cm, logits.argmax(1), y)
        times.append(time.perf_counter() - t0)

    t = sorted(times[5:])
    print(f"median step time: {t[len(t) // 2] * 1e3:.2f} ms over {len(t)} steps")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else STEPS)
