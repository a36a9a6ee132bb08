"""A new Adam optimizer constructed inside the training function at every call.

Thread: "Maintain optimiser object during training",
https://github.com/alan-turing-institute/deepsensor/issues/47

Problem: ``train_epoch(model, batch)`` creates
``torch.optim.Adam(model.parameters())`` each time it is called, and the loop
calls it for every batch: each step rebuilds the parameter groups, then
allocates and zero-fills fresh ``exp_avg``/``exp_avg_sq`` buffers for all 130
parameter tensors, and the moment estimates (the point of Adam) are thrown
away.
Expected fix: construct the optimizer once, before the loop, and keep it (and
its state) for the whole run.
"""
import sys
import time

import torch
import torch.nn.functional as F
from torch import nn

STEPS = 80


def train_epoch(model, batch):
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    x, y = batch
    loss = F.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    return loss.item()


def main(steps=STEPS):
    torch.manual_seed(0)
    layers = []
    for _ in range(32):
        layers += [nn.Linear(32, 32), nn.LayerNorm(32), nn.ReLU()]
    model = nn.Sequential(*layers, nn.Linear(32, 10))
    times = []
    for _ in range(steps):
        t0 = time.perf_counter()
        x = torch.randn(32, 32)
        y = torch.randint(0, 10, (32,))
        train_epoch(model, (x, y))
        times.append(time.perf_counter() - t0)

    t = sorted(times[5:])
    print(f"median step time: {t[len(t) // 2] * 1e3:.2f} ms over {len(t)} steps")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else STEPS)
