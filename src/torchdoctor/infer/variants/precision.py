"""Reduced-precision rungs: the model's floating weights and inputs cast to bf16 or fp16.

Integer inputs (token ids) keep their dtype. Outputs are cast back to float32 for the comparison
against eager. Part of the default ladder on CUDA; available on CPU when asked for.
"""

from __future__ import annotations

from typing import Any

from torchdoctor.infer.variants.base import Prepared, PrepareContext, in_inference_mode, variant
from torchdoctor.infer.variants.eager import state_size


def _cast(model: Any, dtype_name: str) -> Prepared:
    import torch

    from torchdoctor.infer.variants.base import first_tensor

    dtype = getattr(torch, dtype_name)
    model = model.to(dtype)

    def run(*batch: Any) -> Any:
        cast = tuple(a.to(dtype) if a.is_floating_point() else a for a in batch)
        return first_tensor(model(*cast)).float()

    return Prepared(run=in_inference_mode(run), size_bytes=state_size(model))


@variant("bf16", family="precision", copies_model=True)
def bf16(model: Any, args: Any, ctx: PrepareContext, option: str | None) -> Prepared:
    """Weights and floating inputs in bfloat16, under inference_mode."""
    return _cast(model, "bfloat16")


@variant("fp16", family="precision", copies_model=True)
def fp16(model: Any, args: Any, ctx: PrepareContext, option: str | None) -> Prepared:
    """Weights and floating inputs in float16, under inference_mode."""
    return _cast(model, "float16")
