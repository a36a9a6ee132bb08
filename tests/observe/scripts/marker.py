"""Marks its own steps with torchdoctor.step(): two optimizers per step (a GAN-like loop)."""
import torch

import torchdoctor

g, d = torch.nn.Linear(8, 8), torch.nn.Linear(8, 1)
opt_g, opt_d = torch.optim.SGD(g.parameters(), lr=0.01), torch.optim.SGD(d.parameters(), lr=0.01)
for step in range(100):
    opt_d.zero_grad()
    d(g(torch.randn(4, 8)).detach()).mean().backward()
    opt_d.step()
    opt_g.zero_grad()
    (-d(g(torch.randn(4, 8)))).mean().backward()
    opt_g.step()
    torchdoctor.step()
