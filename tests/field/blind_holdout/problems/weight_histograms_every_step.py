"""Histograms and statistics of every weight and gradient logged at every step.

Thread: "Jean/fix log frequency" (weight histograms are logged less often
than the loss because logging them "might take excruciating amount of times
for big networks"),
https://github.com/owkin/FLamby/pull/247

Problem: after each optimizer step the loop records, for each of the
model's parameters, a 64-bin histogram of the weights and of the gradients
plus their norms, pulled to Python with ``.tolist()``/``.item()``, every
single step.
Expected fix: log histograms and per-parameter statistics every N steps (a
logging interval such as 100), keep per-step logging to the loss.
"""
import sys
import time

import torch
import torch.nn.functional as F
from torch import nn

LOG_EVERY = 100


def histograms(model):
    stats = {}
    for name, p in model.named_parameters():
        stats[name] = {"weights": torch.histc(p.detach(), 64).tolist(),
                       "grads": torch.histc(p.grad, 64).tolist(),
                       "norm": p.detach().norm().item(), "grad_norm": p.grad.norm().item()}
    return stats


def main(steps=80):
    torch.manual_seed(0)
    layers = []
    for _ in range(10):
        layers += [nn.Linear(256, 256), nn.LayerNorm(256), nn.ReLU()]
    model = nn.Sequential(*layers, nn.Linear(256, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    log = []
    times = []
    for step in range(steps):
        t0 = time.perf_counter()
        x = torch.randn(64, 256)
        y = torch.randint(0, 10, (64,))
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        record = {"step": step, "loss": loss.item()}
        record["params"] = histograms(model)
        log.append(record)
        times.append(time.perf_counter() - t0)
    t = sorted(times[5:])
    print(f"logged {sum('params' in r for r in log)} histogram sets")
    print(f"median step time: {t[len(t) // 2] * 1e3:.2f} ms over {len(t)} steps")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 80)
