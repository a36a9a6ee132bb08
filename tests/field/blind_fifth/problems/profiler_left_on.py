"""A whole training run wrapped in ``torch.profiler.profile``.

Thread: "if turn on --enable-profiling, training time slows down",
https://github.com/facebookresearch/dlrm/issues/197

Problem: the training loop was put inside ``with torch.profiler.profile(
record_shapes=True, profile_memory=True)`` while investigating speed, and the
context manager was left in place for the real run. Every operator call,
forward and backward, and every optimizer op now records an event with its
input shapes and memory use, which costs several microseconds per op; a model
made of many small operations pays that on hundreds of ops per step, and the
event list keeps growing for the whole run.
Expected fix: remove the profiler from normal training (or profile only a few
steps with a ``schedule``).
"""
import sys
import time

import torch
from torch import nn

STEPS = 40


def make_model():
    layers = []
    for _ in range(12):
        layers += [nn.Linear(64, 64), nn.LayerNorm(64), nn.GELU()]
    return nn.Sequential(*layers, nn.Linear(64, 10))


def main(steps=STEPS):
    torch.manual_seed(0)
    model = make_model()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    x = torch.randn(32, 64)
    y = torch.randint(0, 10, (32,))
    times = []
    with torch.profiler.profile(record_shapes=True, profile_memory=True) as prof:
        for _ in range(steps):
            t0 = time.perf_counter()
            loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            times.append(time.perf_counter() - t0)

    t = sorted(times[5:])
    print(f"median step time: {t[len(t) // 2] * 1e3:.2f} ms over {len(t)} steps")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else STEPS)
