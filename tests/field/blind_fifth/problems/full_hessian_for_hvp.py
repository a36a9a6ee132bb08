"""A Newton-CG optimizer that builds the full Hessian only to multiply it by
vectors.

Thread: "Why HVP, not full H",
https://noahgolmant.github.io/pytorch-hessian-eigenthings/concepts/why-hvp-not-full-h/

Problem: each Newton step of a 200-weight logistic regression solves
``H d = g`` with a few conjugate-gradient iterations. The step first forms the
full 200x200 Hessian with ``torch.autograd.functional.hessian``, which runs one
backward pass per row (200 double-backward passes), although conjugate
gradient only ever needs Hessian-vector products.
Expected fix: compute Hessian-vector products directly (double backward:
``torch.autograd.grad(grad @ v, w)``, ``torch.autograd.functional.hvp`` or
``torch.func.jvp(grad(f))``) inside the CG loop, never materialising H.
"""
import sys
import time

import torch
import torch.nn.functional as F
from torch.autograd.functional import hessian

STEPS = 40
DIM = 200
CG_ITERS = 8


def main(steps=STEPS):
    torch.manual_seed(0)
    X = torch.randn(1000, DIM)
    y = (X @ torch.randn(DIM) > 0).float()
    w = torch.zeros(DIM, requires_grad=True)
    opt = torch.optim.SGD([w], lr=1.0)

    def loss_fn(w):
        return F.binary_cross_entropy_with_logits(X @ w, y) + 1e-3 * w.pow(2).sum()

    times = []
    for _ in range(steps):
        t0 = time.perf_counter()
        g = torch.autograd.grad(loss_fn(w), w)[0]
        H = hessian(loss_fn, w.detach())
        hvp = lambda v: H @ v
        # conjugate gradient on H d = g
        d = torch.zeros_like(g)
        r = g.clone()
        p = r.clone()
        for _ in range(CG_ITERS):
            Hp = hvp(p)
            alpha = (r @ r) / (p @ Hp)
            d += alpha * p
            r_new = r - alpha * Hp
            p = r_new + (r_new @ r_new) / (r @ r) * p
            r = r_new
        w.grad = d
        opt.step()
        times.append(time.perf_counter() - t0)

    t = sorted(times[5:])
    print(f"median step time: {t[len(t) // 2] * 1e3:.2f} ms over {len(t)} steps")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else STEPS)
