"""pytorch/examples dcgan/main.py with `--dataset fake`, recreated small: generator and
discriminator of transposed and strided convolutions at 16x16, fake images from a dataset, BCE,
two Adam optimizers stepped every batch (discriminator on real and fake, then generator).

Prints the original's per-batch losses and its own timing, `[timing] step N: X ms`, from one
batch's end to the next.
"""

from __future__ import annotations

import argparse
import time

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

NZ, NGF, NDF, NC = 16, 16, 16, 3


class FakeImages(Dataset):
    def __init__(self, size: int) -> None:
        self.size = size

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, index: int) -> tuple[torch.Tensor, int]:
        return torch.rand(NC, 16, 16, generator=torch.Generator().manual_seed(index)) * 2 - 1, 0


def generator() -> nn.Module:
    return nn.Sequential(
        nn.ConvTranspose2d(NZ, NGF * 2, 4, 1, 0, bias=False), nn.BatchNorm2d(NGF * 2), nn.ReLU(True),
        nn.ConvTranspose2d(NGF * 2, NGF, 4, 2, 1, bias=False), nn.BatchNorm2d(NGF), nn.ReLU(True),
        nn.ConvTranspose2d(NGF, NC, 4, 2, 1, bias=False), nn.Tanh(),
    )


def discriminator() -> nn.Module:
    return nn.Sequential(
        nn.Conv2d(NC, NDF, 4, 2, 1, bias=False), nn.LeakyReLU(0.2, inplace=True),
        nn.Conv2d(NDF, NDF * 2, 4, 2, 1, bias=False), nn.BatchNorm2d(NDF * 2), nn.LeakyReLU(0.2, inplace=True),
        nn.Conv2d(NDF * 2, 1, 4, 1, 0, bias=False), nn.Sigmoid(), nn.Flatten(0),
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--dataset", default="fake", choices=["fake"])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--batchSize", type=int, default=64)
    parser.add_argument("--steps", type=int, default=60)
    args = parser.parse_args()
    torch.manual_seed(0)
    netG, netD = generator(), discriminator()
    criterion = nn.BCELoss()
    optimizerD = torch.optim.Adam(netD.parameters(), lr=2e-4, betas=(0.5, 0.999))
    optimizerG = torch.optim.Adam(netG.parameters(), lr=2e-4, betas=(0.5, 0.999))
    loader = DataLoader(FakeImages(args.steps * args.batchSize), batch_size=args.batchSize, shuffle=True,
                        num_workers=args.workers)
    end = time.perf_counter()
    for i, (real, _) in enumerate(loader):
        netD.zero_grad()
        label = torch.full((real.size(0),), 1.0)
        errD_real = criterion(netD(real), label)
        errD_real.backward()
        fake = netG(torch.randn(real.size(0), NZ, 1, 1))
        errD_fake = criterion(netD(fake.detach()), label.fill_(0.0))
        errD_fake.backward()
        optimizerD.step()
        netG.zero_grad()
        errG = criterion(netD(fake), label.fill_(1.0))
        errG.backward()
        optimizerG.step()
        now = time.perf_counter()
        print(f"[{i}/{len(loader)}] Loss_D: {(errD_real + errD_fake).item():.4f} Loss_G: {errG.item():.4f}")
        print(f"[timing] step {i}: {(now - end) * 1e3:.3f} ms", flush=True)
        end = now


if __name__ == "__main__":
    main()
