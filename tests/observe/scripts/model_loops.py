"""A training loop with three costs made by how the script's code calls its model and data: a
frozen snapshot made with `copy.deepcopy` every step, per-head layers of a ModuleList applied in a
Python loop, and a dataset that splits and maps its text again at every access (num_workers=0)."""

import copy
import sys

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, Dataset

HEADS, BATCH = 16, 12
WORDS = {f"w{i}": i for i in range(500)}


class Texts(Dataset):
    def __len__(self):
        return 4096

    def __getitem__(self, i):
        text = " ".join(f"w{(i * j) % 500}" for j in range(64))
        ids = [WORDS.get(w, 0) for w in text.split()]
        return torch.tensor(ids[:HEADS], dtype=torch.float32), i % 2


class Heads(nn.Module):
    def __init__(self):
        super().__init__()
        self.heads = nn.ModuleList(nn.Linear(1, 4) for _ in range(HEADS))
        self.out = nn.Linear(4 * HEADS, 2)

    def forward(self, x):
        return self.out(torch.cat([head(x[:, h:h + 1]) for h, head in enumerate(self.heads)], dim=1))


def main(steps):
    torch.manual_seed(0)
    model = Heads()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    batches = iter(DataLoader(Texts(), batch_size=BATCH, shuffle=True))
    for _ in range(steps):
        x, y = next(batches)
        snapshot = copy.deepcopy(model).requires_grad_(False)
        with torch.no_grad():
            target = snapshot(x).softmax(-1)
        logits = model(x)
        loss = F.cross_entropy(logits, y) + F.kl_div(logits.log_softmax(-1), target, reduction="batchmean")
        opt.zero_grad()
        loss.backward()
        opt.step()


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 40)
