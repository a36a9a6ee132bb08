"""Trains a head while its backbone, which no optimizer holds, still gets gradients (TD-COMP-042's
case); argv[1]: steps."""
import sys

import torch

torch.manual_seed(0)
backbone = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(), torch.nn.Linear(256, 256), torch.nn.ReLU())
head = torch.nn.Linear(256, 4)
model = torch.nn.Sequential(backbone, head)
optimizer = torch.optim.SGD(head.parameters(), lr=1e-2)
x, y = torch.randn(64, 64), torch.randint(0, 4, (64,))
for _ in range(int(sys.argv[1])):
    optimizer.zero_grad()
    torch.nn.functional.cross_entropy(model(x), y).backward()
    optimizer.step()
