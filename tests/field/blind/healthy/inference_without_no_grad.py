"""Healthy twin of problems/inference_without_no_grad.py: the scoring loop runs under torch.inference_mode().

The problem it fixes: Batch inference run with autograd recording every operation.

Thread: "Want to make your inference code in PyTorch run faster?" (thread on
torch.inference_mode and torch.no_grad),
https://threadreaderapp.com/thread/1437838231505096708.html

Problem: the scoring loop calls the model without ``torch.no_grad()`` /
``torch.inference_mode()``, so autograd builds a graph and keeps activations
for a backward pass that never comes.
Expected fix: wrap the loop in ``torch.inference_mode()`` (or ``no_grad``).
"""
import sys
import time

import torch
from torch import nn


class Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.norm = nn.LayerNorm(d)
        self.ff = nn.Sequential(nn.Linear(d, 2 * d), nn.GELU(), nn.Linear(2 * d, d))

    def forward(self, x):
        return x + self.ff(self.norm(x))


@torch.inference_mode()
def main(steps=200):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(32, 128), *[Block(128) for _ in range(8)], nn.Linear(128, 4))
    model.eval()
    inputs = torch.randn(steps, 16, 32)
    scores, times = [], []
    for batch in inputs:
        t0 = time.perf_counter()
        out = model(batch)
        scores.append(out.softmax(-1)[:, 1])
        times.append(time.perf_counter() - t0)
    t = sorted(times[5:])
    print(f"scored {sum(len(s) for s in scores)} rows")
    print(f"median step time: {t[len(t) // 2] * 1e3:.2f} ms over {len(t)} steps")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 200)
