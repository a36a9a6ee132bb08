"""A training loop that never calls torch.compile (the compile knob does it for `torchdoctor compile`)."""

import torch
import torch.nn as nn

model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 8))
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
for step in range(40):
    x = torch.randn(16, 64)
    optimizer.zero_grad()
    model(x).square().mean().backward()
    optimizer.step()
