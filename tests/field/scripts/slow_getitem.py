"""A training loop whose Dataset does slow work in `__getitem__` (a sleep standing for decoding
or reading a file) in the main process (`num_workers=0`, the DataLoader default): the loop
waits on data most of each step.

Prints its own timing, `[timing] step N: X ms`, per batch.
"""

from __future__ import annotations

import argparse
import time

import torch
from torch.utils.data import DataLoader, Dataset


class SlowItems(Dataset):
    def __init__(self, size: int, item_s: float) -> None:
        self.size, self.item_s = size, item_s

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, index: int) -> tuple[torch.Tensor, torch.Tensor]:
        time.sleep(self.item_s)
        return torch.randn(64), torch.randn(1)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--item-ms", type=float, default=2.0)
    args = parser.parse_args()
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    loader = DataLoader(SlowItems(args.steps * args.batch_size, args.item_ms / 1e3), batch_size=args.batch_size)
    end = time.perf_counter()
    for i, (x, y) in enumerate(loader):
        loss = torch.nn.functional.mse_loss(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        now = time.perf_counter()
        print(f"[timing] step {i}: {(now - end) * 1e3:.3f} ms", flush=True)
        end = now


if __name__ == "__main__":
    main()
