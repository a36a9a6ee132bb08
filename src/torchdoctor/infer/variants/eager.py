"""The PyTorch eager rungs: as the user calls it, then without autograd bookkeeping."""

from __future__ import annotations

from typing import Any

from torchdoctor.infer.variants.base import (
    Prepared,
    PrepareContext,
    in_inference_mode,
    saved_size,
    variant,
)


def state_size(model: Any) -> int:
    """Bytes of the model's state_dict as torch.save writes it."""
    import torch

    return saved_size(lambda buffer: torch.save(model.state_dict(), buffer))


@variant("eager", family="eager")
def eager(model: Any, args: Any, ctx: PrepareContext, option: str | None) -> Prepared:
    """model(x) with grad mode as the caller left it (on, by default): the baseline."""
    return Prepared(run=model, size_bytes=state_size(model))


@variant("no_grad", family="eager")
def no_grad(model: Any, args: Any, ctx: PrepareContext, option: str | None) -> Prepared:
    """model(x) under torch.no_grad(): no autograd graph is recorded."""
    import torch

    def run(*batch: Any) -> Any:
        with torch.no_grad():
            return model(*batch)

    return Prepared(run=run, size_bytes=state_size(model))


@variant("inference_mode", family="eager")
def inference_mode(model: Any, args: Any, ctx: PrepareContext, option: str | None) -> Prepared:
    """model(x) under torch.inference_mode(): no autograd, no version counters on tensors."""
    return Prepared(run=in_inference_mode(model), size_bytes=state_size(model))
