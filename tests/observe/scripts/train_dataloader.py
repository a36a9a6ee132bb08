"""Trains a small MLP from a DataLoader with an optimizer (the common case)."""
import sys

import torch
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
steps = int(sys.argv[1]) if len(sys.argv) > 1 else 60
data = TensorDataset(torch.randn(4096, 32), torch.randint(0, 4, (4096,)))
loader = DataLoader(data, batch_size=16, shuffle=True)
model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 4))
optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
loss_fn = torch.nn.CrossEntropyLoss()
done = 0
while done < steps:
    for x, y in loader:
        optimizer.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
        done += 1
        if done >= steps:
            break
print("trained", done, "steps")
