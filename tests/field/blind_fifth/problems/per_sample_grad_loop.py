"""Per-sample gradients for DP-SGD clipping computed with one ``autograd.grad``
call per sample.

Thread: "per sample gradient in torch.autograd.grad",
https://github.com/pytorch/pytorch/issues/132378

Problem: differentially private training clips each sample's gradient before
averaging. The script computes the per-sample losses of a batch of 64 and then
calls ``torch.autograd.grad(losses[i], params, retain_graph=True)`` in a Python
loop, one backward pass per sample through the shared graph, and stacks the
results.
Expected fix: compute all per-sample gradients at once with ``torch.func``:
``vmap(grad(loss_of_one_sample), in_dims=(None, 0, 0))(params, x, y)`` using
``functional_call`` (the per-sample-gradients recipe).
"""
import sys
import time

import torch
import torch.nn.functional as F
from torch import nn

STEPS = 40
CLIP = 1.0


def main(steps=STEPS):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(32, 128), nn.ReLU(), nn.Linear(128, 128), nn.ReLU(),
                          nn.Linear(128, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    params = list(model.parameters())
    x = torch.randn(64, 32)
    y = torch.randint(0, 10, (64,))
    times = []
    for _ in range(steps):
        t0 = time.perf_counter()
        losses = F.cross_entropy(model(x), y, reduction="none")
        per_sample = [torch.autograd.grad(losses[i], params, retain_graph=True)
                      for i in range(len(losses))]
        grads = [torch.stack(g) for g in zip(*per_sample)]
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
