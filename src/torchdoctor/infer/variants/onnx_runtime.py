"""The ONNX rung: torch.onnx.export with the dynamo exporter, run in ONNX Runtime.

The model is exported once with a symbolic batch dimension to ``ctx.workdir/model.onnx``; the
session uses as many intra-op threads as torch does, so the comparison is like for like.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from torchdoctor.infer.variants.base import Prepared, PrepareContext, batch_dynamic_shapes, variant

_PROVIDERS = {"cpu": "CPUExecutionProvider", "cuda": "CUDAExecutionProvider"}


@variant("onnxruntime", family="onnx")
def onnxruntime_session(model: Any, args: Any, ctx: PrepareContext, option: str | None) -> Prepared:
    """torch.onnx.export(dynamo=True) with a dynamic batch, run by an ONNX Runtime session."""
    import onnxruntime as ort
    import torch

    provider = _PROVIDERS.get(ctx.device.split(":")[0])
    if provider not in ort.get_available_providers():
        raise RuntimeError(f"onnxruntime has no {provider} here (for CUDA install onnxruntime-gpu)")
    path = ctx.workdir / "model.onnx"
    program = torch.onnx.export(
        model, args, dynamo=True, dynamic_shapes=batch_dynamic_shapes(args, ctx), verbose=False
    )
    program.save(str(path))
    options = ort.SessionOptions()
    options.intra_op_num_threads = torch.get_num_threads()
    session = ort.InferenceSession(str(path), options, providers=[provider])
    names = [i.name for i in session.get_inputs()]
    if len(names) != len(args):
        raise RuntimeError(f"the ONNX graph takes {len(names)} inputs, the model {len(args)}")

    def run(*batch: Any) -> Any:
        feeds = {name: a.detach().cpu().numpy() for name, a in zip(names, batch)}
        return torch.from_numpy(session.run(None, feeds)[0])

    def save(folder: Path) -> Path:
        return Path(shutil.copy(path, folder / "model.onnx"))

    return Prepared(run=run, size_bytes=path.stat().st_size, save=save)
