"""torch.compile rungs, one per mode (``compile``, ``compile:max-autotune``, ...).

Compilation happens lazily on the first call, which the runner counts in the variant's
`prepare_s`; each new batch size may compile again (then marked dynamic), during warm-up.
"""

from __future__ import annotations

from typing import Any

from torchdoctor.infer.variants.base import Prepared, PrepareContext, in_inference_mode, variant
from torchdoctor.infer.variants.eager import state_size

MODES = ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")


@variant("compile", family="compile")
def compiled(model: Any, args: Any, ctx: PrepareContext, option: str | None) -> Prepared:
    """torch.compile(model, mode=OPTION) with the inductor backend, under inference_mode."""
    import torch

    from torchdoctor.infer.errors import InferConfigError

    mode = option or "default"
    if mode not in MODES:
        raise InferConfigError(f"unknown torch.compile mode {mode!r}; choose from {', '.join(MODES)}")
    compiled_model = torch.compile(model, mode=None if mode == "default" else mode)
    return Prepared(run=in_inference_mode(compiled_model), size_bytes=state_size(model))
