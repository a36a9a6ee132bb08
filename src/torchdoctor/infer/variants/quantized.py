"""The int8 rung: torchao's dynamic quantisation (int8 activations, int8 weights) of Linear layers.

Uses ``torchao.quantization.quantize_`` with ``Int8DynamicActivationInt8WeightConfig``, the
replacement for eager-mode ``torch.ao.quantization.quantize_dynamic``. Weights are quantised per
channel ahead of time; activations per token at run time.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from torchdoctor.infer.variants.base import Prepared, PrepareContext, in_inference_mode, variant
from torchdoctor.infer.variants.eager import state_size


@variant("int8_dynamic", family="quantization", copies_model=True)
def int8_dynamic(model: Any, args: Any, ctx: PrepareContext, option: str | None) -> Prepared:
    """torchao quantize_(model, Int8DynamicActivationInt8WeightConfig()), under inference_mode."""
    import torch
    from torchao.quantization import Int8DynamicActivationInt8WeightConfig, quantize_

    if not any(isinstance(m, torch.nn.Linear) for m in model.modules()):
        raise RuntimeError("the model has no torch.nn.Linear layer for int8 quantisation to replace")
    quantize_(model, Int8DynamicActivationInt8WeightConfig())

    def save(folder: Path) -> Path:
        path = folder / "model_int8_state_dict.pt"
        torch.save(model.state_dict(), path)
        return path

    return Prepared(run=in_inference_mode(model), size_bytes=state_size(model), save=save)
