"""Per-sample augmentation runs in the training process (DataLoader num_workers=0).

Thread: "Dataloader SuperSuper Slow",
https://discuss.pytorch.org/t/dataloader-supersuper-slow/68563

Problem: every image is cropped, resized, jittered and normalised inside
``__getitem__`` while the model waits, because the DataLoader has no worker
processes.
Expected fix: load in worker processes (``num_workers=2``,
``persistent_workers=True``) so loading overlaps with the step.
"""
import sys
import time

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, Dataset


class AugmentedImages(Dataset):
    def __init__(self, n=4096):
        g = torch.Generator().manual_seed(0)
        self.images = torch.randint(0, 256, (n, 3, 64, 64), dtype=torch.uint8, generator=g)
        self.labels = torch.randint(0, 10, (n,), generator=g)
        self.mean = torch.tensor([0.485, 0.456, 0.406]).view(3, 1, 1)
        self.std = torch.tensor([0.229, 0.224, 0.225]).view(3, 1, 1)

    def __len__(self):
        return len(self.images)

    def __getitem__(self, i):
        img = self.images[i].float() / 255
        top, left = torch.randint(0, 16, (2,)).tolist()
        img = img[:, top:top + 48, left:left + 48]
        img = F.interpolate(img[None], size=(40, 40), mode="bilinear", align_corners=False)[0]
        if torch.rand(()) < 0.5:
            img = img.flip(-1)
        img = img * (0.8 + 0.4 * torch.rand(3, 1, 1))
        blur = torch.ones(3, 1, 5, 5) / 25
        img = F.conv2d(img[None], blur, padding=2, groups=3)[0]
        return (img - self.mean) / self.std, self.labels[i]


def make_loader(dataset):
    return DataLoader(dataset, batch_size=16, shuffle=True, num_workers=0)


def main(steps=80):
    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(16 * 10 * 10, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loader = make_loader(AugmentedImages())
    times, done = [], 0
    while done < steps:
        t0 = time.perf_counter()
        for x, y in loader:
            loss = F.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            t1 = time.perf_counter()
            times.append(t1 - t0)
            t0 = t1
            done += 1
            if done >= steps:
                break
    t = sorted(times[5:])
    print(f"median step time: {t[len(t) // 2] * 1e3:.2f} ms over {len(t)} steps")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 80)
