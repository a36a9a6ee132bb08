"""The model traced again with ``torch.jit.trace`` for every inference batch.

Thread: "Increased memory usage in repetitive torch.jit.trace calls",
https://github.com/pytorch/pytorch/issues/35600

Problem: the scoring loop calls ``torch.jit.trace(model, batch)`` on every
batch and runs the traced module once; each call re-records the whole forward
pass, builds and optimises a TorchScript graph and, by default, checks the
trace by running the model again, so every batch pays a compilation many times
the cost of its forward pass (and memory grows with the repeated traces).
Expected fix: trace (or ``torch.jit.script``/``torch.compile``) once, before
the loop, and reuse the traced module for every batch, or skip tracing for a
short run.
"""
import sys
import time

import torch
from torch import nn

STEPS = 40


def main(steps=STEPS):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(128, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(),
                          nn.Linear(256, 10)).eval()
    times = []
    with torch.no_grad():
        for _ in range(steps):
            t0 = time.perf_counter()
            x = torch.randn(64, 128)
            traced = torch.jit.trace(model, x)
            scores = traced(x)
            scores.argmax(1)
            times.append(time.perf_counter() - t0)

    t = sorted(times[5:])
    print(f"median step time: {t[len(t) // 2] * 1e3:.2f} ms over {len(t)} steps")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else STEPS)
