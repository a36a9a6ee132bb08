"""Per-sample augmentation applied to the full-size image before the random crop.

Thread: "feat: add RandomCrop module in transforms" (review note: cropping
should be performed BEFORE the other transformations because it is lighter
that way, less information to deal with),
https://github.com/mindee/doctr/pull/448

Problem: ``__getitem__`` blurs, colour-jitters and normalises every
256x256 image and only then cuts the 64x64 training crop out of it, so 15
of every 16 pixels are processed and thrown away, in the training process,
for every sample.
Expected fix: take the random crop first and augment only the crop (crop
order in the transform pipeline: crop, then the per-pixel transforms).
"""
import sys
import time

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, Dataset

CROP = 64


class Images(Dataset):
    def __init__(self, n=64, size=256):
        g = torch.Generator().manual_seed(0)
        self.images = torch.randint(0, 256, (n, 3, size, size), dtype=torch.uint8, generator=g)
        self.labels = torch.randint(0, 10, (n,), generator=g)
        self.kernel = torch.ones(3, 1, 5, 5) / 25.0
        self.mean = torch.tensor([0.485, 0.456, 0.406]).view(3, 1, 1)
        self.std = torch.tensor([0.229, 0.224, 0.225]).view(3, 1, 1)

    def __len__(self):
        return len(self.images)

    def augment(self, img):
        img = F.conv2d(img.unsqueeze(0), self.kernel, padding=2, groups=3).squeeze(0)
        img = img * (0.8 + 0.4 * torch.rand(3, 1, 1))
        return (img - self.mean) / self.std

    def crop(self, img):
        top, left = torch.randint(0, img.shape[-1] - CROP + 1, (2,)).tolist()
        return img[:, top:top + CROP, left:left + CROP]

    def __getitem__(self, i):
        img = self.images[i].float() / 255.0
        img = self.crop(self.augment(img))
        return img, self.labels[i]


def main(steps=60):
    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
        nn.Linear(32, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loader = DataLoader(Images(), batch_size=16, shuffle=True, num_workers=0)
    times = []
    while len(times) < steps:
        t0 = time.perf_counter()
        for x, y in loader:
            loss = F.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            times.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            if len(times) == steps:
                break
    t = sorted(times[5:])
    print(f"median step time: {t[len(t) // 2] * 1e3:.2f} ms over {len(t)} steps")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 60)
