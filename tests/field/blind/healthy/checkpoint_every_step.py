"""Healthy twin of problems/checkpoint_every_step.py: a checkpoint every 40 steps.

The problem it fixes: A full checkpoint written to disk after every training step.

Thread: "training weights saving very slow" (weights saved every batch
instead of every checkpoint interval),
https://github.com/eriklindernoren/PyTorch-YOLOv3/issues/173 ; see also
"torch.save and torch.load is slow",
https://github.com/pytorch/pytorch/issues/124195

Problem: ``torch.save`` of the model and optimizer state runs inside the step
loop, so every step also serialises and writes tens of megabytes.
Expected fix: checkpoint every N steps or once per epoch.
"""
import os
import sys
import tempfile
import time

import torch
import torch.nn.functional as F
from torch import nn

SAVE_EVERY = 40


def main(steps=80):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(512, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(),
                          nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 10))
    opt = torch.optim.Adam(model.parameters(), lr=1e-4)
    x_all = torch.randn(2048, 512)
    y_all = torch.randint(0, 10, (2048,))
    times = []
    with tempfile.TemporaryDirectory() as out:
        for step in range(steps):
            t0 = time.perf_counter()
            idx = torch.randint(0, len(x_all), (32,))
            loss = F.cross_entropy(model(x_all[idx]), y_all[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            if (step + 1) % SAVE_EVERY == 0:
                torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "step": step},
                           os.path.join(out, "last.pt"))
            times.append(time.perf_counter() - t0)
    t = sorted(times[5:])
    print(f"mean step time: {sum(t) / len(t) * 1e3:.2f} ms over {len(t)} steps")
    print(f"median step time: {t[len(t) // 2] * 1e3:.2f} ms over {len(t)} steps")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 80)
