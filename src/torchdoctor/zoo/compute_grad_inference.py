"""Problem: an inference loop that never calls backward, run with autograd recording on.

`model.eval()` alone does not turn autograd off; every forward builds a graph nobody uses.
Expected top finding: TD-COMP-008.
"""

from __future__ import annotations

import torch

from torchdoctor.zoo.common import epochs_from_argv, mlp

if __name__ == "__main__":
    torch.manual_seed(0)
    model = mlp(256, 256, layers=6).eval()
    batches = torch.randn(64, 32, 256)
    for _ in range(epochs_from_argv()):
        for x in batches:
            scores = model(x)
