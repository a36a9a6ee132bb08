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
        # pretrained feature extractor, frozen while the head is fine-tuned
        self.backbone = nn.Sequential(
            nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten())
        self.backbone.requires_grad_(False)
        self.head = nn.Sequential(nn.Linear(32 * 8 * 16, 128), nn.ReLU(), nn.Linear(128, 40))

    def forward(self, images, targets):
        return {"loss": F.cross_entropy(self.head(self.backbone(images)), targets)}


def main(steps=STEPS):
    torch.manual_seed(0)
    model = Recognizer()
    opt = torch.optim.Adam(model.head.parameters(), lr=1e-3)
    times = []
    for _ in range(steps):
        images, targets = torch.randn(16, 1, 32, 64), torch.randint(0, 40, (16,))
        t0 = time.perf_counter()
        opt.zero_grad()
        train_loss = model(images, targets)["loss"]
        train_loss.backward()
        torch.nn.utils.clip_grad_norm_(model.head.parameters(), 5)
        opt.step()
        times.append(time.perf_counter() - t0)

    t = sorted(times[5:])
    print(f"median step time: {t[len(t) // 2] * 1e3:.2f} ms over {len(t)} steps")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else STEPS)
