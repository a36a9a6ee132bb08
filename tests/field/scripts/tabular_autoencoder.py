"""Recreated shape of a third-party tabular anomaly-detection script (an autoencoder trained on CSV
rows; found on GitHub with the code search, a `utils.py` of `model_train`/`vae_train`): a Dataset
that builds each row's tensor from a Python record, plain SGD on a reconstruction loss, and
`torch.autograd.set_detect_anomaly(True)` called inside the loop after every optimizer step, with
`loss.item()` kept per step. The original reads a CSV with pandas; the rows here are made in
memory (no pandas in the test environment, no files).

Prints its own timing, `[timing] step N: X ms`, per batch.
"""

from __future__ import annotations

import argparse
import random
import time

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

FEATURES = 32


class Rows(Dataset):
    """One record per row, its label dropped when the row is read (as the original's `row.drop`)."""

    def __init__(self, size: int) -> None:
        rng = random.Random(0)
        self.rows = [{**{f"f{j}": rng.gauss(0.0, 1.0) for j in range(FEATURES)}, "label": rng.random() < 0.05}
                     for _ in range(size)]

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, index: int) -> torch.Tensor:
        row = {k: v for k, v in self.rows[index].items() if k != "label"}
        return torch.tensor(list(row.values())).float()


class AutoEncoder(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(FEATURES, 16), nn.ReLU(), nn.Linear(16, 8), nn.ReLU(), nn.Linear(8, 4))
        self.decoder = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, FEATURES))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.decoder(self.encoder(x))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--batch-size", type=int, default=32)
    args = parser.parse_args()
    torch.manual_seed(0)
    model = AutoEncoder()
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-2, weight_decay=1e-5)
    criterion = nn.MSELoss(reduction="mean")
    loader = DataLoader(Rows(args.steps * args.batch_size), batch_size=args.batch_size)
    model.train(True)
    epoch_loss = []
    end = time.perf_counter()
    for i, batch in enumerate(loader):
        x_in = batch.type(torch.float32)
        loss = criterion(model(x_in), x_in)
        model.zero_grad()
        loss.backward()
        optimizer.step()
        torch.autograd.set_detect_anomaly(True)
        epoch_loss.append(loss.item())
        now = time.perf_counter()
        print(f"[timing] step {i}: {(now - end) * 1e3:.3f} ms", flush=True)
        end = now
    print(f"epoch 1: {sum(epoch_loss) / len(epoch_loss)}")


if __name__ == "__main__":
    main()
