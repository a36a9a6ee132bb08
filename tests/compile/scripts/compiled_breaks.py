"""A compiled model with a graph break (`.item()` in forward) and changing sequence lengths."""

import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Linear(32, 64)
        self.b = nn.Linear(64, 32)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.relu(self.a(x))
        if h.mean().item() > 10.0:  # graph break: data-dependent branch
            h = h * 0.5
        return self.b(h).square().mean()


model = Net()
compiled = torch.compile(model, backend="eager", dynamic=False)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
for step in range(60):
    x = torch.randn(8, 4 + step % 3, 32)  # three shapes: recompiles with dynamic=False
    optimizer.zero_grad()
    compiled(x).backward()
    optimizer.step()
