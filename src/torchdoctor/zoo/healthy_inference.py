"""Healthy: batched inference of an MLP under torch.inference_mode().

Known problem: none (no autograd recording, large batches). Expected: no finding of severity
warning or above.
"""

from __future__ import annotations

import torch

from torchdoctor.zoo.common import epochs_from_argv, mlp

if __name__ == "__main__":
    torch.manual_seed(0)
    model = mlp(512, 1024).eval()
    batches = torch.randn(16, 512, 512)
    with torch.inference_mode():
        for _ in range(epochs_from_argv()):
            for x in batches:
                model(x)
