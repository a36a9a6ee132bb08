"""Updates weights by hand after backward(), without a torch.optim optimizer."""
import torch

torch.manual_seed(0)
w = torch.randn(16, 1, requires_grad=True)
x_all, y_all = torch.randn(512, 16), torch.randn(512, 1)
for step in range(100):
    i = (step * 32) % 512
    loss = ((x_all[i : i + 32] @ w - y_all[i : i + 32]) ** 2).mean()
    loss.backward()
    with torch.no_grad():
        w -= 0.01 * w.grad
        w.grad = None
