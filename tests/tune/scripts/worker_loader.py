"""A training loop reading a map-style dataset through one DataLoader worker."""

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

if __name__ == "__main__":
    torch.manual_seed(0)
    data = TensorDataset(torch.randn(4096, 16), torch.randn(4096, 1))
    model = nn.Linear(16, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    for x, y in DataLoader(data, batch_size=32, num_workers=1):
        optimizer.zero_grad()
        ((model(x) - y) ** 2).mean().backward()
        optimizer.step()
