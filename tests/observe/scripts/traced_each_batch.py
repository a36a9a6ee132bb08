"""Scores batches with a model traced again for every batch (torch.jit.trace runs the model twice:
the trace and its check), then compares the traced module's output with the model's own."""

import sys

import torch

model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4)).eval()
batches = int(sys.argv[1]) if len(sys.argv) > 1 else 30
with torch.no_grad():
    for _ in range(batches):
        x = torch.randn(8, 16)
        traced = torch.jit.trace(model, x)
        assert torch.allclose(traced(x), model(x))
print(f"scored {batches} batches")
