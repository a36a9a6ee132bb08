"""`torchdoctor infer`: the fastest correct way to run a model, measured on its own inputs.

Public API: :func:`load_model` (a factory spec -> model and example batch), :class:`InferConfig`,
:func:`run_ladder` (-> :class:`InferResult`, JSON via ``to_dict()``/``to_json()``, documented in
docs/inference.md).
"""

from __future__ import annotations

from torchdoctor.infer.config import InferConfig
from torchdoctor.infer.factory import DEMO_SPEC, ModelAndExample, load_model
from torchdoctor.infer.result import (
    SCHEMA_VERSION,
    Accuracy,
    BatchMeasurement,
    InferResult,
    Recommendation,
    VariantResult,
)
from torchdoctor.infer.runner import run_ladder

__all__ = [
    "DEMO_SPEC",
    "SCHEMA_VERSION",
    "Accuracy",
    "BatchMeasurement",
    "InferConfig",
    "InferResult",
    "ModelAndExample",
    "Recommendation",
    "VariantResult",
    "load_model",
    "run_ladder",
]
