"""Problem: every sample is read from slow remote storage (simulated: 1 ms of latency per read),
in the main process, so the step waits with the CPU idle.

More CPU would not help; more reads in flight would. Expected top finding: TD-DATA-007.
"""

from __future__ import annotations

import time

import torch

from torchdoctor.zoo.common import epochs_from_argv, mlp, train


class RemoteSamples(torch.utils.data.Dataset):
    def __init__(self, samples: int, features: int) -> None:
        gen = torch.Generator().manual_seed(0)
        self.x, self.y = torch.randn(samples, features, generator=gen), torch.randn(samples, 1, generator=gen)

    def __len__(self) -> int:
        return len(self.x)

    def __getitem__(self, i: int) -> tuple[torch.Tensor, torch.Tensor]:
        time.sleep(0.001)  # the latency of one small object-store read
        return self.x[i], self.y[i]


if __name__ == "__main__":
    torch.manual_seed(0)
    loader = torch.utils.data.DataLoader(RemoteSamples(2048, 64), batch_size=32, shuffle=True)
    model = mlp(64, 64)
    train(model, lambda: loader, torch.optim.Adam(model.parameters()), epochs_from_argv())
