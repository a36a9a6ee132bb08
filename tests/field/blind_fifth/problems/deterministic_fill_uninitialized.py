"""Deterministic mode left on, filling every newly allocated tensor with NaN.

Thread: "Deterministic training fills every new tensor with NaN when training
yolo26x on COCO on a B200", https://github.com/ultralytics/ultralytics/issues/26181

Problem: the seeding helper calls ``torch.use_deterministic_algorithms(True)``
for reproducibility. Besides choosing deterministic kernels, that switches on
``torch.utils.deterministic.fill_uninitialized_memory``: every tensor created
through ``torch.empty``/``empty_like``/``new_empty`` is first filled with NaN
before any op writes it, and that includes the output buffers that operators
allocate for their results. Each element-wise op of the memory-bound model
below, forward and backward, therefore writes its output twice.
Expected fix: set ``torch.utils.deterministic.fill_uninitialized_memory =
False`` next to ``use_deterministic_algorithms(True)`` (nothing reads memory
it did not write), or leave deterministic mode off when it is not needed.
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
