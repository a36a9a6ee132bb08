"""The pattern of pytorch/examples `regression/main.py`, recreated (not copied): fit a polynomial with
one nn.Linear, batches generated on the fly, an endless `itertools.count` loop, `.item()` every step,
a hand-written SGD update under no_grad (no optimizer object) and a stop on a loss threshold."""

from itertools import count

import torch
import torch.nn.functional as F

DEGREE = 4
true_weight = torch.randn(DEGREE, 1) * 5
true_bias = torch.randn(1) * 5


def features(x):
    return torch.cat([x.unsqueeze(1) ** i for i in range(1, DEGREE + 1)], 1)


def batch(size=32):
    x = features(torch.randn(size))
    return x, x.mm(true_weight) + true_bias.item()


layer = torch.nn.Linear(DEGREE, 1)
for index in count(1):
    x, y = batch()
    layer.zero_grad()
    loss_tensor = F.smooth_l1_loss(layer(x), y)
    loss = loss_tensor.item()
    loss_tensor.backward()
    with torch.no_grad():
        for p in layer.parameters():
            p.add_(-0.1 * p.grad)
    if loss < 1e-3:
        break
print(f"loss {loss:.6f} after {index} batches")
