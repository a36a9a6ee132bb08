"""Never calls torch.compile; its forward has a graph break (.item()) and its input shape changes."""
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


torch.manual_seed(0)
model = Net()
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
for step in range(60):
    x = torch.randn(8, 4 + step % 3, 32)  # three shapes: recompiles with dynamic=False
    optimizer.zero_grad()
    model(x).backward()
    optimizer.step()
