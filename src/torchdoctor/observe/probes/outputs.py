"""What `tune`'s numerics check reads from a run: a seed set before the script starts, and a
sample of the outermost module's outputs over the steps that follow the timing window.

- `TORCHDOCTOR_SEED=N`: Python's `random`, NumPy and torch are seeded with N before the script
  runs, so that two runs of an unseeded script see the same initial weights, data order and
  random inputs. A script that seeds itself wins: its own call comes later.
- `ObserveConfig.capture_steps=N`: for each call of the first outermost module during the N steps
  that follow the timing window (at most `MAX_CALLS`), kept on its device without a
  synchronisation: a fixed strided sample of at most `SAMPLE` elements of the output's first
  floating tensor, its argmax along the last dimension for at most `ROWS` rows, its mean and
  standard deviation, and a strided sample of the first input tensor (two runs saw the same
  inputs when these are equal). Written to `outputs_rank<RANK>.pt` in the run's folder when the
  run ends; `load_outputs` reads it back. The sample's small operators run after the timed steps,
  never in them: in them they made a 1.4 ms compiled step a fifth slower in every run, which
  shrank the speed-ups tune claims.
"""

from __future__ import annotations

import os
import random
from pathlib import Path
from typing import Any

import torch

SEED_ENV = "TORCHDOCTOR_SEED"
SAMPLE = 4096
ROWS = 256
INPUT_SAMPLE = 1024
MAX_CALLS = 256


def seed_from_env() -> int | None:
    """Seed random, NumPy and torch from `TORCHDOCTOR_SEED` (nothing when it is not set)."""
    text = os.environ.get(SEED_ENV)
    if not text:
        return None
    seed = int(text)
    random.seed(seed)
    try:
        import numpy

        numpy.random.seed(seed % 2**32)
    except ImportError:  # pragma: no cover - numpy ships with torch's usual installs
        pass
    torch.manual_seed(seed)
    return seed


def _first_tensor(value: Any, floating: bool, depth: int = 0) -> torch.Tensor | None:
    if isinstance(value, torch.Tensor):
        return value if (value.is_floating_point() or not floating) and value.numel() else None
    if depth > 3:
        return None
    items: list[Any] = []
    if isinstance(value, (list, tuple)):
        items = list(value)[:8]
    elif isinstance(value, dict):
        items = list(value.values())[:8]
    elif hasattr(value, "__dict__") and not isinstance(value, torch.nn.Module):
        items = list(vars(value).values())[:8]
    for item in items:
        found = _first_tensor(item, floating, depth + 1)
        if found is not None:
            return found
    return None


def _strided(tensor: torch.Tensor, count: int) -> torch.Tensor:
    flat = tensor.detach().reshape(-1)
    if flat.numel() > count:
        index = torch.linspace(0, flat.numel() - 1, count, device=flat.device).long()
        flat = flat[index]
    return flat.clone()


class OutputCapture:
    """Samples of the outermost module's outputs (see the module docstring)."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []
        self._input: torch.Tensor | None = None

    def note_inputs(self, args: Any, kwargs: Any) -> None:
        found = _first_tensor([*args, *dict(kwargs or {}).values()], floating=False)
        self._input = _strided(found, INPUT_SAMPLE) if found is not None else None

    def note_output(self, output: Any) -> None:
        if len(self.calls) >= MAX_CALLS:
            return
        tensor = _first_tensor(output, floating=True)
        if tensor is None:
            return
        with torch.no_grad():
            detached = tensor.detach()
            values = detached.float()
            # A model that returns its loss outputs one number, whose sample std is undefined: torch
            # warns into the user's stderr on every step (a GPT on a GPU printed it in each tune run).
            std = values.std() if values.numel() > 1 else values.new_zeros(())
            call: dict[str, Any] = {"shape": list(detached.shape), "sample": _strided(detached, SAMPLE),
                                    "mean": values.mean(), "std": std, "input": self._input}
            if detached.dim() >= 2 and detached.shape[-1] >= 2:
                rows = detached.reshape(-1, detached.shape[-1])
                if rows.shape[0] > ROWS:
                    rows = rows[torch.linspace(0, rows.shape[0] - 1, ROWS, device=rows.device).long()]
                call["argmax"] = rows.argmax(dim=-1)
        self.calls.append(call)

    def write(self, out_dir: str | Path, rank: int) -> None:
        """Move the samples to the host and save them (after the window: no sync inside it)."""
        calls = []
        for call in self.calls:
            calls.append({key: (value.detach().float().cpu() if isinstance(value, torch.Tensor)
                                and key in ("sample", "input") and value.is_floating_point()
                                else value.detach().cpu() if isinstance(value, torch.Tensor)
                                else value) for key, value in call.items()})
            for key in ("mean", "std"):
                calls[-1][key] = float(calls[-1][key])
        path = Path(out_dir) / f"outputs_rank{rank}.pt"
        path.parent.mkdir(parents=True, exist_ok=True)
        torch.save(calls, path)


def load_outputs(out_dir: str | Path, rank: int = 0) -> list[dict[str, Any]] | None:
    """The samples a run wrote (None when it wrote none)."""
    path = Path(out_dir) / f"outputs_rank{rank}.pt"
    if not path.is_file():
        return None
    try:
        return torch.load(path, weights_only=True)
    except Exception:  # a run killed while writing
        return None
