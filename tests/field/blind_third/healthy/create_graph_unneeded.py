"""Healthy twin of problems/create_graph_unneeded.py: the gradients are taken without ``create_graph``.

The problem it fixes: Gradients taken with ``create_graph=True`` although no higher-order derivative is used.

Thread: "Hello, why are 'create_graph' arguments these places True?" (the
gradients returned by ``torch.autograd.grad(..., create_graph=True)`` are
never used to compute higher-order derivative products),
https://github.com/silverbottlep/meta_trackers/issues/11

Problem: a hand-written SGD loop gets its gradients with
``torch.autograd.grad(loss, params, create_graph=True)`` and applies them
under ``torch.no_grad()``; autograd still records a differentiable graph
of the whole backward pass (and keeps its inputs alive) every step, for
nothing.
Expected fix: drop ``create_graph=True`` (the default ``False`` computes the
same first-order gradients), or call ``loss.backward()`` and an optimizer.
"""
import sys
import time

import torch
import torch.nn.functional as F
from torch import nn


def main(steps=80):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 256), nn.Tanh(), nn.Linear(256, 256), nn.Tanh(),
                          nn.Linear(256, 256), nn.Tanh(), nn.Linear(256, 10))
    params = list(model.parameters())
    times = []
    for step in range(steps):
        t0 = time.perf_counter()
        x = torch.randn(128, 64)
        y = torch.randint(0, 10, (128,))
        loss = F.cross_entropy(model(x), y)
        grads = torch.autograd.grad(loss, params)
        with torch.no_grad():
            for p, g in zip(params, grads):
                p.sub_(0.01 * g)
        times.append(time.perf_counter() - t0)
    t = sorted(times[5:])
    print(f"median step time: {t[len(t) // 2] * 1e3:.2f} ms over {len(t)} steps")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 80)
