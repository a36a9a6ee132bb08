"""Problem: inference one request at a time (batch size 1) through a deep, narrow model.

Each call dispatches hundreds of tiny operators whose fixed cost dwarfs the work on one sample;
batching requests would share that cost. Expected top finding: TD-COMP-018.
"""

from __future__ import annotations

import torch

from torchdoctor.zoo.common import epochs_from_argv, mlp

if __name__ == "__main__":
    torch.manual_seed(0)
    model = mlp(32, 32, layers=1000).eval()
    requests = torch.randn(64, 1, 32)  # one sample per call
    with torch.inference_mode():
        for _ in range(epochs_from_argv()):
            for x in requests:
                model(x)
