"""Healthy twin of problems/conv_via_unfold.py: the layer calls ``F.conv2d``.

The problem it fixes: A convolution layer written as ``F.unfold`` followed by a
matrix multiply.
"""
import sys
import time

import torch
import torch.nn.functional as F
from torch import nn

STEPS = 40


class UnfoldConv(nn.Module):
    def __init__(self, c_in, c_out):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(c_out, c_in, 3, 3) * (2 / (9 * c_in)) ** 0.5)
        self.bias = nn.Parameter(torch.zeros(c_out))

    def forward(self, x):
        return F.conv2d(x, self.weight, self.bias, padding=1)


def main(steps=STEPS):
    torch.manual_seed(0)
    model = nn.Sequential(UnfoldConv(3, 32), nn.ReLU(), UnfoldConv(32, 64), nn.ReLU(),
                          nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    times = []
    for _ in range(steps):
        t0 = time.perf_counter()
        x = torch.randn(16, 3, 32, 32)
        y = torch.randint(0, 10, (16,))
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        times.append(time.perf_counter() - t0)

    t = sorted(times[5:])
    print(f"median step time: {t[len(t) // 2] * 1e3:.2f} ms over {len(t)} steps")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else STEPS)
