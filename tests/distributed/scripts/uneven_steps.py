"""Two ranks that train independently (no collective in the loop); rank 1 stops after 5 steps."""
import torch
import torch.distributed as dist

dist.init_process_group("gloo")
steps = 5 if dist.get_rank() == 1 else 200
model = torch.nn.Linear(32, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
for step in range(steps):
    optimizer.zero_grad()
    model(torch.randn(16, 32)).pow(2).mean().backward()
    optimizer.step()
dist.destroy_process_group()
