"""Activation (gradient) checkpointing on a small model that fits in memory.

Thread: "option to disable gradient checkpointing" (a trainer always
checkpointed activations; users asked to switch it off because they prefer
faster training to a larger batch),
https://github.com/Nerogar/OneTrainer/issues/40

Problem: every block runs through ``torch.utils.checkpoint.checkpoint``
although the model and its activations are a few megabytes, so each block's
forward pass is computed twice (once more during backward) for memory nobody
needs.
Expected fix: turn activation checkpointing off (call the blocks directly)
when memory is not the constraint; keep it only for models that do not fit.
"""
import sys
import time

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.checkpoint import checkpoint


class Block(nn.Module):
    def __init__(self, dim=256):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.ff = nn.Sequential(nn.Linear(dim, 2 * dim), nn.GELU(), nn.Dropout(0.1),
                                nn.Linear(2 * dim, dim))

    def forward(self, x):
        return x + self.ff(self.norm(x))


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList(Block() for _ in range(8))
        self.head = nn.Linear(256, 10)

    def forward(self, x):
        for block in self.blocks:
            x = checkpoint(block, x, use_reentrant=False)
        return self.head(x)


def main(steps=60):
    torch.manual_seed(0)
    model = Net()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    times = []
    for step in range(steps):
        t0 = time.perf_counter()
        x = torch.randn(128, 256)
        y = torch.randint(0, 10, (128,))
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        times.append(time.perf_counter() - t0)
    t = sorted(times[5:])
    print(f"median step time: {t[len(t) // 2] * 1e3:.2f} ms over {len(t)} steps")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 60)
