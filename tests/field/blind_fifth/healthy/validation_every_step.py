"""Healthy twin of problems/validation_every_step.py: validation runs every 200
steps instead of after every step.

The problem it fixes: The whole validation set evaluated after every training
step.
"""
import sys
import time

import torch
import torch.nn.functional as F
from torch import nn

STEPS = 40
VAL_EVERY = 200


def evaluate(model, val_x, val_y):
    model.eval()
    correct = 0
    with torch.no_grad():
        for i in range(0, len(val_x), 512):
            correct += (model(val_x[i:i + 512]).argmax(1) == val_y[i:i + 512]).sum().item()
    model.train()
    return correct / len(val_x)


def main(steps=STEPS):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(128, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(),
                          nn.Linear(256, 10))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    val_x, val_y = torch.randn(8192, 128), torch.randint(0, 10, (8192,))
    history = []
    times = []
    for step in range(steps):
        x, y = torch.randn(256, 128), torch.randint(0, 10, (256,))
        t0 = time.perf_counter()
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if (step + 1) % VAL_EVERY == 0:
            history.append(evaluate(model, val_x, val_y))
        times.append(time.perf_counter() - t0)

    t = sorted(times[5:])
    print(f"median step time: {t[len(t) // 2] * 1e3:.2f} ms over {len(t)} steps")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else STEPS)
