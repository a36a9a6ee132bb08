"""Problem: a debug environment variable left set in a training script.

The script sets `TORCH_SHOW_CPP_STACKTRACES=1` (copied from a debugging session); harmless for speed
on this CPU run, it is the kind of setting (with CUDA_LAUNCH_BLOCKING) that must not reach
production. Expected top finding: TD-CONF-001.
"""

from __future__ import annotations

import os

import torch

from torchdoctor.zoo.common import batched_loader, epochs_from_argv, mlp, train

os.environ["TORCH_SHOW_CPP_STACKTRACES"] = "1"

if __name__ == "__main__":
    torch.manual_seed(0)
    loader = batched_loader(8192, 256, 256)
    model = mlp(256, 512)
    train(model, lambda: loader, torch.optim.Adam(model.parameters()), epochs_from_argv())
