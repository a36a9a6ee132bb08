"""An evaluation loop: no loss, no backward; the model's outputs are all there is to check."""

import torch
from torch import nn

model = nn.Sequential(nn.Linear(64, 256), nn.GELU(), nn.Linear(256, 256), nn.GELU(), nn.Linear(256, 10))
model.eval()
with torch.no_grad():
    for step in range(100_000):
        x = torch.randn(128, 64)
        logits = model(x)
        predictions = logits.argmax(dim=1)
