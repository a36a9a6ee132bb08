"""Problem: the model is wrapped in nn.DataParallel instead of DistributedDataParallel.

On a CPU-only machine DataParallel just calls the module, so no step time is lost here; on GPUs it
replicates the model from one process every step. Expected top finding: TD-SCALE-004 (info on CPU).
"""

from __future__ import annotations

import torch

from torchdoctor.zoo.common import batched_loader, epochs_from_argv, mlp, train

if __name__ == "__main__":
    torch.manual_seed(0)
    loader = batched_loader(8192, 256, 256)
    model = torch.nn.DataParallel(mlp(256, 512))
    train(model, lambda: loader, torch.optim.Adam(model.parameters()), epochs_from_argv())
