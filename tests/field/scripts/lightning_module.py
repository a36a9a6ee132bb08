"""A Lightning module trained with automatic optimisation (training_step inside the optimizer's
closure), as Lightning's own examples train one; tiny MLP, random data made here.

Prints its own timing, `[timing] step N: X ms`, from one training batch's end to the next (a
callback of its own, as a user times Lightning). `--sleep-in forward|backward|data` puts a known
sleep in one part of every step. `main(argv, callbacks)` lets tests add callbacks in-process.
"""

from __future__ import annotations

import argparse
import time
from typing import Any, Sequence

import lightning as L
import torch
from torch.utils.data import DataLoader, Dataset


class Points(Dataset):
    def __init__(self, size: int, item_sleep_s: float) -> None:
        self.x, self.y = torch.randn(size, 32), torch.randn(size, 1)
        self.item_sleep_s = item_sleep_s

    def __len__(self) -> int:
        return len(self.x)

    def __getitem__(self, i: int) -> tuple[torch.Tensor, torch.Tensor]:
        if self.item_sleep_s:
            time.sleep(self.item_sleep_s)
        return self.x[i], self.y[i]


class Regressor(L.LightningModule):
    def __init__(self, forward_sleep_s: float = 0.0, backward_sleep_s: float = 0.0) -> None:
        super().__init__()
        self.net = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1))
        self.forward_sleep_s = forward_sleep_s
        if backward_sleep_s:
            self.net[0].weight.register_hook(lambda grad: time.sleep(backward_sleep_s))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.forward_sleep_s:
            time.sleep(self.forward_sleep_s)
        return self.net(x)

    def training_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
        x, y = batch
        return torch.nn.functional.mse_loss(self(x), y)

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.Adam(self.parameters(), lr=1e-3)


class StepTimer(L.Callback):
    def on_train_batch_end(self, trainer: Any, pl_module: Any, outputs: Any, batch: Any, batch_idx: int) -> None:
        now = time.perf_counter()
        if batch_idx:
            print(f"[timing] step {batch_idx}: {(now - self.last) * 1e3:.3f} ms", flush=True)
        self.last = now


def main(argv: Sequence[str] | None = None, callbacks: Sequence[Any] = ()) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--sleep-in", choices=["none", "forward", "backward", "data"], default="none")
    parser.add_argument("--sleep-s", type=float, default=0.05)
    args = parser.parse_args(argv)
    torch.manual_seed(0)
    sleep = {args.sleep_in: args.sleep_s}
    model = Regressor(sleep.get("forward", 0.0), sleep.get("backward", 0.0))
    data = Points(args.steps * args.batch_size, sleep.get("data", 0.0) / args.batch_size)
    trainer = L.Trainer(max_steps=args.steps, max_epochs=1, accelerator="cpu", devices=1, logger=False,
                        enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False,
                        callbacks=[StepTimer(), *callbacks])
    trainer.fit(model, DataLoader(data, batch_size=args.batch_size))


if __name__ == "__main__":
    main()
