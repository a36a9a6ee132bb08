"""A regression loss between a (N, 1) prediction and a (N,) target, broadcast to
(N, N).

Thread: "UserWarning in InitalCondition.py",
https://github.com/Photon-AI-Research/NeuralSolvers/issues/20

Problem: the model returns predictions of shape (4096, 1) and the targets have
shape (4096,); ``F.mse_loss`` broadcasts the two to a (4096, 4096) matrix (only
a UserWarning says so), so every step computes, averages and backpropagates
16.7 million squared differences instead of 4096, and the gradient is wrong
too.
Expected fix: give prediction and target the same shape
(``pred.squeeze(-1)`` or ``target.unsqueeze(-1)``) before the loss.
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
    model = nn.Sequential(nn.Linear(3, 64), nn.Tanh(), nn.Linear(64, 64), nn.Tanh(),
                          nn.Linear(64, 1))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    x = torch.randn(4096, 3)
    target = torch.sin(x).sum(1)
    times = []
    for _ in range(steps):
        t0 = time.perf_counter()
        pred = model(x)
        loss = F.mse_loss(pred, target)
        opt.zero_grad()
        loss.backward()
        opt.step()
        times.append(time.perf_counter() - t0)

    t = sorted(times[5:])
    print(f"median step time: {t[len(t) // 2] * 1e3:.2f} ms over {len(t)} steps")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else STEPS)
