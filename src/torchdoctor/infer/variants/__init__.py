"""The ladder's variants, one module per family; importing this package fills the registry.

Default ladders: :data:`CPU_LADDER` and :data:`CUDA_LADDER`, in the order they are measured.
"""

from __future__ import annotations

from torchdoctor.discovery import import_submodules
from torchdoctor.infer.variants.base import REGISTRY, Prepared, PrepareContext, resolve

import_submodules(__name__)  # each variant module registers its variants

CPU_LADDER = ("eager", "no_grad", "inference_mode", "compile", "export", "onnxruntime", "int8_dynamic")
CUDA_LADDER = (
    "eager",
    "no_grad",
    "inference_mode",
    "bf16",
    "fp16",
    "compile",
    "compile:max-autotune",
    "export",
    "onnxruntime",
)


def default_ladder(device: str) -> tuple[str, ...]:
    """The variants measured on `device` when the user names none."""
    return CUDA_LADDER if device.startswith("cuda") else CPU_LADDER


__all__ = ["REGISTRY", "Prepared", "PrepareContext", "default_ladder", "resolve"]
