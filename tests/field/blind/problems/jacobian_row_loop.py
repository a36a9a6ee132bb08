"""A Jacobian penalty computed one output row at a time in a Python loop.

Thread: "Jacobian computation with a single call to grad",
https://discuss.pytorch.org/t/jacobian-computation-with-a-single-call-to-grad/83134

Problem: the loss needs d(output)/d(input); the script calls
``torch.autograd.grad`` once per output dimension (with ``create_graph``), so
each step runs as many extra backward passes as the model has outputs.
Expected fix: compute all rows in one vectorised call
(``autograd.grad(..., is_grads_batched=True)`` or ``torch.func.vmap`` /
``jacrev``).
"""
import sys
import time

import torch
import torch.nn.functional as F
from torch import nn

OUT = 16


def jacobian(y, x):
    rows = []
    for i in range(OUT):
        (g,) = torch.autograd.grad(y[:, i].sum(), x, create_graph=True)
        rows.append(g)
    return torch.stack(rows, 1)


def main(steps=80):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(OUT, 64), nn.Tanh(), nn.Linear(64, 64), nn.Tanh(), nn.Linear(64, OUT))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    times = []
    for step in range(steps):
        t0 = time.perf_counter()
        x = torch.randn(32, OUT, requires_grad=True)
        y = model(x)
        jac = jacobian(y, x)
        eye = torch.eye(OUT).expand_as(jac)
        loss = F.mse_loss(y, x.detach().flip(-1)) + 0.1 * (jac - eye).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        times.append(time.perf_counter() - t0)
    t = sorted(times[5:])
    print(f"median step time: {t[len(t) // 2] * 1e3:.2f} ms over {len(t)} steps")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 80)
