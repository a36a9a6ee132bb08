"""Healthy twin of problems/jit_trace_every_batch.py: the model is traced once,
before the loop.

The problem it fixes: The model traced again with ``torch.jit.trace`` for every
inference batch.
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
    traced = torch.jit.trace(model, torch.randn(64, 128))
    times = []
    with torch.no_grad():
        for _ in range(steps):
            t0 = time.perf_counter()
            x = torch.randn(64, 128)
            scores = traced(x)
            scores.argmax(1)
            times.append(time.perf_counter() - t0)

    t = sorted(times[5:])
    print(f"median step time: {t[len(t) // 2] * 1e3:.2f} ms over {len(t)} steps")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else STEPS)
