"""Healthy twin of problems/forward_twice_per_batch.py: the loss of one forward
pass is backpropagated.

The problem it fixes: A training loop that runs the model forward twice on
every batch.
"""
import sys
import time

import torch
import torch.nn.functional as F
from torch import nn

STEPS = 40


class Recognizer(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Flatten(), nn.Linear(64 * 8 * 32, 128), nn.ReLU(), nn.Linear(128, 40))

    def forward(self, images, targets):
        return {"loss": F.cross_entropy(self.body(images), targets)}


def main(steps=STEPS):
    torch.manual_seed(0)
    model = Recognizer()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    times = []
    for _ in range(steps):
        images, targets = torch.randn(32, 1, 32, 128), torch.randint(0, 40, (32,))
        t0 = time.perf_counter()
        opt.zero_grad()
        train_loss = model(images, targets)["loss"]
        train_loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 5)
        opt.step()
        times.append(time.perf_counter() - t0)

    t = sorted(times[5:])
    print(f"median step time: {t[len(t) // 2] * 1e3:.2f} ms over {len(t)} steps")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else STEPS)
