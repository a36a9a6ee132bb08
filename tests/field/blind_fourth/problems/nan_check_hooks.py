"""NaN-detection forward hooks left on every module for the whole run.

Thread: "PyTorch NaNs Are Silent Killers - So I Built a 3ms Hook to Catch Them
at the Exact Layer",
https://deeptrendlab.com/article/pytorch-nans-are-silent-killers-so-i-built-a-3ms-hook-to-catch-them-at-deb177

Problem: a debugging helper registered a forward hook on each of the model's 50
modules that checks ``torch.isfinite(output).all()`` and reads the answer with
``bool()``; the hooks stay on for the whole training run, so every step pays 50
extra reductions, 50 host reads and 50 Python hook calls on top of a forward
pass of small layers.
Expected fix: remove the hooks (keep the handles and call ``handle.remove()``)
once the NaN is found, or check only the loss, or only every N steps.
"""
import sys
import time

import torch
import torch.nn.functional as F
from torch import nn

STEPS = 100


def check_finite(module, inputs, output):
    if not bool(torch.isfinite(output).all()):
        raise FloatingPointError(f"non-finite output in {module.__class__.__name__}")


def main(steps=STEPS):
    torch.manual_seed(0)
    layers = []
    for _ in range(16):
        layers += [nn.Linear(32, 32), nn.LayerNorm(32), nn.ReLU()]
    model = nn.Sequential(*layers, nn.Linear(32, 10))
    for module in model.modules():
        module.register_forward_hook(check_finite)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    times = []
    for _ in range(steps):
        t0 = time.perf_counter()
        x = torch.randn(32, 32)
        y = torch.randint(0, 10, (32,))
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        times.append(time.perf_counter() - t0)

    t = sorted(times[5:])
    print(f"median step time: {t[len(t) // 2] * 1e3:.2f} ms over {len(t)} steps")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else STEPS)
