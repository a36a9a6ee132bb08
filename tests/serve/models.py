"""A served test model: token 99 makes it raise, token 98 makes it slow (0.3 s)."""

from __future__ import annotations

import time

import torch

from tests.infer.models import TinyClassifier


class Moody(TinyClassifier):
    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        if (tokens == 99).any():
            raise RuntimeError("token 99 is poison")
        if (tokens == 98).any():
            time.sleep(0.3)
        return super().forward(tokens)


def moody() -> tuple[torch.nn.Module, torch.Tensor]:
    torch.manual_seed(0)
    return Moody(), torch.randint(0, 90, (4, 8))
