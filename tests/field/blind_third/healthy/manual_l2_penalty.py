"""Healthy twin of problems/manual_l2_penalty.py: the L2 term is the optimizer's ``weight_decay``.

The problem it fixes: L2 regularisation added to the loss by looping over every parameter tensor.

Thread: "PyTorch L2 Regularization: Conquer Overfitting with `weight_decay`"
(the efficient way is the optimizer's ``weight_decay`` parameter, which
modifies the gradient internally instead of extending the computation
graph with a hand-written penalty),
https://openillumi.com/en/en-pytorch-l2-regularization-weight-decay

Problem: each step adds ``wd / 2 * sum(p.pow(2).sum() for p in
model.parameters())`` to the loss; with ~150 parameter tensors that is
~450 extra small operators in the forward pass and as many in the backward
pass, plus the Python loop, for what SGD does in one fused update.
Expected fix: drop the penalty and pass ``weight_decay=wd`` to the optimizer
(``torch.optim.SGD(..., weight_decay=wd)``; AdamW for decoupled decay).
"""
import sys
import time

import torch
import torch.nn.functional as F
from torch import nn


def main(steps=80):
    torch.manual_seed(0)
    layers = []
    for _ in range(36):
        layers += [nn.Linear(32, 32), nn.LayerNorm(32), nn.ReLU()]
    model = nn.Sequential(*layers, nn.Linear(32, 4))
    wd = 1e-4
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, weight_decay=wd, foreach=True)
    times = []
    for step in range(steps):
        t0 = time.perf_counter()
        x = torch.randn(32, 32)
        y = torch.randint(0, 4, (32,))
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        times.append(time.perf_counter() - t0)
    t = sorted(times[5:])
    print(f"median step time: {t[len(t) // 2] * 1e3:.2f} ms over {len(t)} steps")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 80)
