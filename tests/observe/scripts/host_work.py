"""A training loop with host-side work in its step: a collate function building the batch from a
list of NumPy arrays, an input-gradient penalty taken one output row at a time, and statistics
read element by element with .item()."""
import sys

import numpy as np
import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

OUT = 4


class Rows(Dataset):
    def __init__(self, n: int = 4096) -> None:
        self.x = np.random.default_rng(0).standard_normal((n, 8)).astype(np.float32)

    def __len__(self) -> int:
        return len(self.x)

    def __getitem__(self, i: int) -> np.ndarray:
        return self.x[i]


def collate(rows):
    return torch.tensor(rows)


def penalty(y, x):
    rows = [torch.autograd.grad(y[:, i].sum(), x, create_graph=True)[0] for i in range(OUT)]
    return torch.stack(rows).pow(2).mean()


def main(steps: int) -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 32), nn.Tanh(), nn.Linear(32, OUT))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    positive = 0
    for step, x in enumerate(DataLoader(Rows(), batch_size=32, collate_fn=collate)):
        if step == steps:
            break
        x.requires_grad_(True)
        y = model(x)
        loss = y.pow(2).mean() + 0.1 * penalty(y, x)
        opt.zero_grad()
        loss.backward()
        opt.step()
        positive += sum(1 for v in y.detach().flatten() if v.item() > 0)
    print(f"positive outputs: {positive}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 100)
