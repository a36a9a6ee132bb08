"""pytorch/examples regression/main.py, recreated: fit a degree-4 polynomial with one Linear layer,
batches drawn in the loop, `smooth_l1_loss`, parameters updated by hand (no optimizer: steps can
only be found from `backward`), until the loss falls under 1e-3 or `--steps` batches.

Prints its own timing, `[timing] step N: X ms` (N from 0), per batch.
"""

from __future__ import annotations

import argparse
import time
from itertools import count

import torch
import torch.nn.functional as F

POLY_DEGREE = 4
W_target = torch.randn(POLY_DEGREE, 1) * 5
b_target = torch.randn(1) * 5


def make_features(x: torch.Tensor) -> torch.Tensor:
    x = x.unsqueeze(1)
    return torch.cat([x ** i for i in range(1, POLY_DEGREE + 1)], 1)


def get_batch(batch_size: int = 32) -> tuple[torch.Tensor, torch.Tensor]:
    x = make_features(torch.randn(batch_size))
    return x, x.mm(W_target) + b_target.item()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=400)
    parser.add_argument("--lr", type=float, default=1e-3, help="original: 0.1 (converges in a few dozen batches)")
    args = parser.parse_args()
    torch.manual_seed(0)
    fc = torch.nn.Linear(W_target.size(0), 1)
    end = time.perf_counter()
    for batch_idx in count(1):
        batch_x, batch_y = get_batch()
        fc.zero_grad()
        output = F.smooth_l1_loss(fc(batch_x), batch_y)
        loss = output.item()
        output.backward()
        for param in fc.parameters():
            param.data.add_(-args.lr * param.grad)
        now = time.perf_counter()
        print(f"[timing] step {batch_idx - 1}: {(now - end) * 1e3:.3f} ms", flush=True)
        end = now
        if loss < 1e-3 or batch_idx >= args.steps:
            break
    print(f"Loss: {loss:.6f} after {batch_idx} batches")


if __name__ == "__main__":
    main()
