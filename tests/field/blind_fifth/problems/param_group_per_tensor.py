"""An optimizer built with one parameter group per parameter tensor.

Thread: "perf(training): group optimizer parameters by their hyperparameters",
https://github.com/roboflow/rf-detr/pull/1409

Problem: to give biases and norm weights no weight decay, the script builds
``AdamW([{"params": [p], "weight_decay": wd(p)} for p in model.parameters()],
foreach=True)``: 98 groups for 98 tensors that only need two distinct
settings. ``step()`` loops over the groups in Python and runs its multi-tensor
(foreach) update once per group, so every step pays the per-group bookkeeping
and 98 single-tensor updates instead of two batched ones.
Expected fix: group parameters by their hyperparameters (one group with
weight decay, one without).
"""
import sys
import time

import torch
import torch.nn.functional as F
from torch import nn

STEPS = 40


def make_model():
    layers = []
    for _ in range(24):
        layers += [nn.Linear(64, 64), nn.LayerNorm(64), nn.ReLU()]
    return nn.Sequential(*layers, nn.Linear(64, 10))


def param_groups(model):
    return [{"params": [p], "weight_decay": 0.05 if p.dim() > 1 else 0.0}
            for p in model.parameters()]


def main(steps=STEPS):
    torch.manual_seed(0)
    model = make_model()
    opt = torch.optim.AdamW(param_groups(model), lr=1e-3, foreach=True)
    x = torch.randn(16, 64)
    y = torch.randint(0, 10, (16,))
    times = []
    for _ in range(steps):
        t0 = time.perf_counter()
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        times.append(time.perf_counter() - t0)

    t = sorted(times[5:])
    print(f"median step time: {t[len(t) // 2] * 1e3:.2f} ms over {len(t)} steps")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else STEPS)
