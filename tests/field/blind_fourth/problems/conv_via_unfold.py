"""A convolution layer written as ``F.unfold`` followed by a matrix multiply.

Thread: "Conv1d implementation using torch.nn.functional.unfold",
https://discuss.pytorch.org/t/conv1d-implementation-using-torch-nn-functional-unfold/109643

Problem: the custom convolution layer extracts every 3x3 patch with
``F.unfold`` (a tensor nine times the input's size), multiplies it by the
flattened kernel and reshapes the result, forward and backward (where ``fold``
scatters the patch gradients back), instead of calling the library's
convolution.
Expected fix: call ``F.conv2d(x, self.weight, self.bias, padding=1)`` (or use
``nn.Conv2d``).
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
        b, _, h, w = x.shape
        cols = F.unfold(x, 3, padding=1)
        out = self.weight.flatten(1) @ cols
        return out.view(b, -1, h, w) + self.bias[:, None, None]


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
