"""A frozen snapshot of the model made with ``copy.deepcopy`` at every step.

Thread: "moving deep copy outside of loop" (a ``deepcopy`` made inside
the per-batch loop; moving it out took training from 2-3 hours to 1 hour),
https://github.com/tgm-team/tgm/pull/235

Problem: a consistency loss compares the model with a frozen copy of
its own weights; the copy is rebuilt with ``copy.deepcopy(model)`` every step,
which walks every submodule in Python and allocates every parameter anew.
Expected fix: make the snapshot module once and refresh its weights in place
each step (``p_snapshot.copy_(p)`` under ``torch.no_grad()``, or
``load_state_dict``).
"""
import copy
import sys
import time

import torch
import torch.nn.functional as F
from torch import nn


def block():
    return nn.Sequential(nn.Linear(128, 128), nn.LayerNorm(128), nn.ReLU(), nn.Dropout(0.1))


def main(steps=120):
    torch.manual_seed(0)
    model = nn.Sequential(*[block() for _ in range(12)], nn.Linear(128, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    times = []
    for step in range(steps):
        t0 = time.perf_counter()
        x = torch.randn(64, 128)
        y = torch.randint(0, 10, (64,))
        snapshot = copy.deepcopy(model).eval().requires_grad_(False)
        with torch.no_grad():
            target = snapshot(x + 0.05 * torch.randn_like(x)).softmax(-1)
        logits = model(x)
        loss = F.cross_entropy(logits, y) + F.kl_div(logits.log_softmax(-1), target,
                                                     reduction="batchmean")
        opt.zero_grad()
        loss.backward()
        opt.step()
        times.append(time.perf_counter() - t0)
    t = sorted(times[5:])
    print(f"median step time: {t[len(t) // 2] * 1e3:.2f} ms over {len(t)} steps")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 120)
