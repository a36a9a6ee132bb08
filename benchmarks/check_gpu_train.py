"""A CUDA training step: two 4096-wide fp32 Linear layers on a 8192-row batch (~6 matmuls a step).
EXTRA adds matmuls to the forward (each also costs two in backward): the deliberate GPU slowdown."""
import torch
from torch import nn

EXTRA = 0
torch.manual_seed(0)
torch.backends.cuda.matmul.allow_tf32 = False
model = nn.Sequential(nn.Linear(4096, 4096), nn.ReLU(), nn.Linear(4096, 4096)).cuda()
opt = torch.optim.SGD(model.parameters(), lr=1e-4)
x = torch.randn(8192, 4096, device="cuda")
for step in range(100000):
    y = model(x)
    for _ in range(EXTRA):
        y = torch.relu(y @ model[2].weight)
    loss = y.pow(2).mean()
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
