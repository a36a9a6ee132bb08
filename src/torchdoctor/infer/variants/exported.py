"""The torch.export rung: an ExportedProgram with a symbolic batch dimension, run as a module."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from torchdoctor.infer.variants.base import (
    Prepared,
    PrepareContext,
    batch_dynamic_shapes,
    in_inference_mode,
    saved_size,
    variant,
)


@variant("export", family="export")
def exported(model: Any, args: Any, ctx: PrepareContext, option: str | None) -> Prepared:
    """torch.export.export(model, x, dynamic batch) and its .module(), under inference_mode."""
    import torch

    program = torch.export.export(model, args, dynamic_shapes=batch_dynamic_shapes(args, ctx))

    def save(folder: Path) -> Path:
        path = folder / "model.pt2"
        torch.export.save(program, path)
        return path

    return Prepared(
        run=in_inference_mode(program.module()),
        size_bytes=saved_size(lambda buffer: torch.export.save(program, buffer)),
        save=save,
    )
