"""Weight EMA updated with a Python loop of two in-place ops per tensor.

Thread: "Faster ``ModelEMA`` update with batched ``_foreach_lerp_``" (the
EMA update ran a Python loop with two in-place ops per state-dict tensor on
every optimizer step; one batched ``torch._foreach_lerp_`` made it 2.2x
faster),
https://github.com/ultralytics/ultralytics/pull/25315

Problem: after each optimizer step the averaged copy is updated the way
many training scripts do it: both ``state_dict()`` are rebuilt and each of
the ~200 floating-point tensors gets ``v.mul_(d).add_(msd[k], alpha=1 - d)``,
paying Python and per-op dispatch overhead ~400 times a step for tiny
tensors.
Expected fix: collect the tensors once and update them in one batched call,
``torch._foreach_lerp_(ema_tensors, model_tensors, 1 - d)`` (as
``torch.optim.swa_utils.get_ema_multi_avg_fn`` does).
"""
import copy
import sys
import time

import torch
import torch.nn.functional as F
from torch import nn


def main(steps=150):
    torch.manual_seed(0)
    layers = []
    for _ in range(48):
        layers += [nn.Linear(32, 32), nn.LayerNorm(32), nn.ReLU()]
    model = nn.Sequential(*layers, nn.Linear(32, 4))
    ema = copy.deepcopy(model).requires_grad_(False)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, foreach=True)
    decay = 0.999
    times = []
    for step in range(steps):
        t0 = time.perf_counter()
        x = torch.randn(16, 32)
        y = torch.randint(0, 4, (16,))
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        with torch.no_grad():
            msd = model.state_dict()
            for k, v in ema.state_dict().items():
                if v.dtype.is_floating_point:
                    v.mul_(decay).add_(msd[k].detach(), alpha=1 - decay)
        times.append(time.perf_counter() - t0)
    t = sorted(times[5:])
    print(f"averaged weight sum: {sum(v.sum().item() for v in ema.state_dict().values()):.4f}")
    print(f"median step time: {t[len(t) // 2] * 1e3:.2f} ms over {len(t)} steps")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 150)
