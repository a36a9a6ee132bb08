"""Knobs: optimisations applied at run time to an unmodified script, and the code that makes them
permanent. Importing this package registers every knob in `REGISTRY` (name -> Knob)."""

from __future__ import annotations

from torchdoctor.knobs import (  # noqa: F401  (each module registers its knobs)
    batch_size,
    checkpointing,
    compile,
    dataloader,
    distributed,
    optimizer,
    precision,
    runtime,
)
from torchdoctor.knobs.base import REGISTRY, CallEdit, IntRange, Knob
from torchdoctor.knobs.order import COMPOSITION_ORDER, apply_knobs, composition_order, knob_env

__all__ = ["COMPOSITION_ORDER", "REGISTRY", "CallEdit", "IntRange", "Knob", "apply_knobs",
           "composition_order", "knob_env"]
