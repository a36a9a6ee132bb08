"""Healthy twin of problems/per_sample_grad_loop.py: per-sample gradients come
from ``torch.func.vmap(grad(...))``.

The problem it fixes: Per-sample gradients for DP-SGD clipping computed with
one ``autograd.grad`` call per sample.
"""
import sys
import time

import torch
import torch.nn.functional as F
from torch import nn
from torch.func import functional_call, grad, vmap

STEPS = 40
CLIP = 1.0


def main(steps=STEPS):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(32, 128), nn.ReLU(), nn.Linear(128, 128), nn.ReLU(),
                          nn.Linear(128, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    params = list(model.parameters())
    names = [n for n, _ in model.named_parameters()]

    def sample_loss(p, xi, yi):
        out = functional_call(model, dict(zip(names, p)), (xi[None],))
        return F.cross_entropy(out, yi[None])

    per_sample_grad = vmap(grad(sample_loss), in_dims=(None, 0, 0))
    x = torch.randn(64, 32)
    y = torch.randint(0, 10, (64,))
    times = []
    for _ in range(steps):
        t0 = time.perf_counter()
        grads = per_sample_grad(tuple(p.detach() for p in params), x, y)
        norms = torch.sqrt(sum(g.flatten(1).pow(2).sum(1) for g in grads))
        scale = (CLIP / (norms + 1e-6)).clamp(max=1.0)
        for p, g in zip(params, grads):
            p.grad = (g * scale.view(-1, *[1] * (g.dim() - 1))).mean(0)
        opt.step()
        times.append(time.perf_counter() - t0)

    t = sorted(times[5:])
    print(f"median step time: {t[len(t) // 2] * 1e3:.2f} ms over {len(t)} steps")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else STEPS)
