"""Training statistics gathered with ``.item()`` on every element of the batch.

Thread: "Optimizing training (recording batch statistics)",
https://discuss.pytorch.org/t/optimizing-training-recording-batch-statistics/22649

Problem: accuracy and per-sample losses are recorded by looping over the batch
in Python and calling ``.item()`` on each element, so each step pays hundreds
of tiny tensor reads.
Expected fix: compute the statistics with tensor operations and read one
scalar per step (``(pred == y).sum().item()``), or keep them as tensors and
read them at the end of the epoch.
"""
import sys
import time

import torch
import torch.nn.functional as F
from torch import nn


def main(steps=80):
    torch.manual_seed(0)
    x_all = torch.randn(16384, 64)
    y_all = (x_all[:, :10].argmax(1) + (x_all[:, 10] > 1).long()) % 10
    model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    history = {"loss": [], "correct": 0, "seen": 0}
    times = []
    for step in range(steps):
        t0 = time.perf_counter()
        idx = torch.randint(0, len(x_all), (256,))
        x, y = x_all[idx], y_all[idx]
        logits = model(x)
        per_sample = F.cross_entropy(logits, y, reduction="none")
        loss = per_sample.mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        pred = logits.argmax(1)
        history["correct"] += sum(1 for p, t in zip(pred, y) if p.item() == t.item())
        history["seen"] += len(y)
        history["loss"].extend(v.item() for v in per_sample.detach())
        times.append(time.perf_counter() - t0)
    t = sorted(times[5:])
    print(f"accuracy {history['correct'] / history['seen']:.3f}")
    print(f"median step time: {t[len(t) // 2] * 1e3:.2f} ms over {len(t)} steps")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 80)
