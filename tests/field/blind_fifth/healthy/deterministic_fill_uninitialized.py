"""Healthy twin of problems/deterministic_fill_uninitialized.py: deterministic
mode stays on but ``fill_uninitialized_memory`` is switched off.

The problem it fixes: Deterministic mode left on, filling every newly allocated
tensor with NaN.
"""
import sys
import time

import torch
import torch.nn.functional as F
from torch import nn

STEPS = 40


def seed_everything(seed):
    torch.manual_seed(seed)
    torch.use_deterministic_algorithms(True)
    torch.utils.deterministic.fill_uninitialized_memory = False


class GatedMix(nn.Module):
    """Element-wise gated residual mixing of four branches."""

    def __init__(self, dim):
        super().__init__()
        self.gate = nn.Parameter(torch.ones(4, dim))

    def forward(self, x):
        out = x
        for g in self.gate:
            out = out + torch.tanh(x * g)
        return F.layer_norm(out, out.shape[-1:])


def main(steps=STEPS):
    seed_everything(0)
    model = nn.Sequential(*[GatedMix(512) for _ in range(6)], nn.Linear(512, 10))
    opt = torch.optim.SGD(model.parameters(), lr=1e-2)
    x = torch.randn(512, 512)
    y = torch.randint(0, 10, (512,))
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
