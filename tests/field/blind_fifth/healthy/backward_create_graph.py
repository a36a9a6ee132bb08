"""Healthy twin of problems/backward_create_graph.py: the loop calls
``loss.backward()``.

The problem it fixes: A plain training loop calling
``loss.backward(create_graph=True)``.
"""
import sys
import time
import warnings

import torch
import torch.nn.functional as F
from torch import nn

STEPS = 40


def main(steps=STEPS):
    torch.manual_seed(0)
    warnings.simplefilter("ignore")
    model = nn.Sequential(*[m for _ in range(8) for m in (nn.Linear(256, 256), nn.Tanh())],
                          nn.Linear(256, 10))
    opt = torch.optim.SGD(model.parameters(), lr=1e-2, momentum=0.9)
    x = torch.randn(256, 256)
    y = torch.randint(0, 10, (256,))
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
