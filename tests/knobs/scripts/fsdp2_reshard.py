"""FSDP2 (`fully_shard` on gloo) training of a small MLP, each layer then the root sharded; each rank
prints whether its first layer frees its gathered parameters after forward."""
import torch
import torch.distributed as dist
from torch.distributed.fsdp import fully_shard

dist.init_process_group("gloo")
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1))
for layer in (model[0], model[2]):
    fully_shard(layer)
fully_shard(model)
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
try:
    for step in range(3):
        x, y = torch.randn(16, 32), torch.randn(16, 1)
        optimizer.zero_grad()
        torch.nn.functional.mse_loss(model(x), y).backward()
        optimizer.step()
    group = fully_shard.state(model[0])._fsdp_param_group
    print(f"rank {dist.get_rank()} reshards after forward: {group.post_forward_mesh_info is not None}", flush=True)
finally:
    dist.destroy_process_group()
