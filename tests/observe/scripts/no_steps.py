"""Does tensor arithmetic but never calls a module, backward() or an optimizer."""
import torch

total = sum(float((torch.randn(10) ** 2).sum()) for _ in range(5))
print("sum of squares computed")
