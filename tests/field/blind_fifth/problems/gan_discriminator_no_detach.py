"""A GAN discriminator update that backpropagates into the generator.

Thread: "why is detach necessary", https://github.com/pytorch/examples/issues/116

Problem: the discriminator step scores ``fake = G(z)`` without ``.detach()``
and calls ``d_loss.backward(retain_graph=True)`` (added to silence the "backward
through the graph a second time" error when the generator loss reuses
``fake``). Every discriminator backward therefore continues through the whole
generator and computes generator gradients that are zeroed and never used,
and the generator's graph is kept alive across both backward passes.
Expected fix: score ``fake.detach()`` in the discriminator step (plain
``d_loss.backward()``); only the generator step backpropagates through G.
"""
import sys
import time

import torch
import torch.nn.functional as F
from torch import nn

STEPS = 40


def main(steps=STEPS):
    torch.manual_seed(0)
    G = nn.Sequential(nn.Linear(64, 512), nn.ReLU(), nn.Linear(512, 1024), nn.ReLU(),
                      nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 784), nn.Tanh())
    D = nn.Sequential(nn.Linear(784, 64), nn.LeakyReLU(0.2), nn.Linear(64, 1))
    opt_g = torch.optim.Adam(G.parameters(), lr=2e-4, betas=(0.5, 0.999))
    opt_d = torch.optim.Adam(D.parameters(), lr=2e-4, betas=(0.5, 0.999))
    ones, zeros = torch.ones(128, 1), torch.zeros(128, 1)
    times = []
    for _ in range(steps):
        real = torch.rand(128, 784) * 2 - 1
        t0 = time.perf_counter()
        fake = G(torch.randn(128, 64))
        # discriminator step
        d_loss = (F.binary_cross_entropy_with_logits(D(real), ones)
                  + F.binary_cross_entropy_with_logits(D(fake), zeros))
        opt_d.zero_grad()
        d_loss.backward(retain_graph=True)
        opt_d.step()
        # generator step
        g_loss = F.binary_cross_entropy_with_logits(D(fake), ones)
        opt_g.zero_grad()
        g_loss.backward()
        opt_g.step()
        times.append(time.perf_counter() - t0)

    t = sorted(times[5:])
    print(f"median step time: {t[len(t) // 2] * 1e3:.2f} ms over {len(t)} steps")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else STEPS)
