"""pytorch/examples imagenet/main.py with `--dummy`, recreated small: fake images from a dataset
(as `datasets.FakeData` gives them), DataLoader workers, CrossEntropy, SGD with momentum and
weight decay, `batch_time` measured from one batch's end to the next as the original's
AverageMeter does. A tiny CNN stands in for the ResNet (torchvision is not a dependency); like
ResNet's, its convolutions have no bias before BatchNorm.

Prints its own timing, `[timing] step N: X ms`, the original's `batch_time` per batch.
"""

from __future__ import annotations

import argparse
import time

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset


class FakeImages(Dataset):
    """Random 3x32x32 images and labels, made per item as FakeData does."""

    def __init__(self, size: int, classes: int) -> None:
        self.size, self.classes = size, classes

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, index: int) -> tuple[torch.Tensor, int]:
        generator = torch.Generator().manual_seed(index)
        image = torch.randn(3, 32, 32, generator=generator)
        return image, int(torch.randint(0, self.classes, (1,), generator=generator))


def tiny_cnn(classes: int) -> nn.Module:
    return nn.Sequential(
        nn.Conv2d(3, 16, 3, padding=1, bias=False), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1, bias=False), nn.BatchNorm2d(32), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
        nn.Flatten(), nn.Linear(32, classes),
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--dummy", action="store_true", help="use fake data (the only data here)")
    parser.add_argument("-j", "--workers", type=int, default=2)
    parser.add_argument("-b", "--batch-size", type=int, default=64)
    parser.add_argument("--lr", type=float, default=0.1)
    parser.add_argument("--steps", type=int, default=60)
    args = parser.parse_args()
    torch.manual_seed(0)
    model = tiny_cnn(10)
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), args.lr, momentum=0.9, weight_decay=1e-4)
    loader = DataLoader(FakeImages(args.steps * args.batch_size, 10), batch_size=args.batch_size, shuffle=True,
                        num_workers=args.workers, pin_memory=False)
    model.train()
    end = time.perf_counter()
    for i, (images, target) in enumerate(loader):
        output = model(images)
        loss = criterion(output, target)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        batch_time = time.perf_counter() - end
        print(f"[timing] step {i}: {batch_time * 1e3:.3f} ms", flush=True)
        end = time.perf_counter()


if __name__ == "__main__":
    main()
