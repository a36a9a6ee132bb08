"""Trains on batches sliced from in-memory tensors: no DataLoader."""
import torch

torch.manual_seed(0)
x_all, y_all = torch.randn(2048, 16), torch.randn(2048, 1)
model = torch.nn.Linear(16, 1)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
for step in range(100):
    i = (step * 32) % 2048
    x, y = x_all[i : i + 32], y_all[i : i + 32]
    optimizer.zero_grad()
    torch.nn.functional.mse_loss(model(x), y).backward()
    optimizer.step()
