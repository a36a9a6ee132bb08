"""Comparing a variant's output with eager's on the same batch (definitions in `Accuracy`)."""

from __future__ import annotations

from typing import Any

from torchdoctor.infer.result import Accuracy


def compare_outputs(reference: Any, output: Any) -> Accuracy:
    """Errors of `output` against `reference`; raises ValueError when the shapes differ."""
    ref = reference.detach().float().cpu()
    out = output.detach().float().cpu()
    if ref.shape != out.shape:
        raise ValueError(f"output shape {tuple(out.shape)} differs from eager's {tuple(ref.shape)}")
    if ref.numel() == 0:
        return Accuracy(0.0, 0.0)
    max_abs = float((out - ref).abs().max())
    scale = float(ref.abs().max())
    top1 = None
    if ref.dim() == 2 and ref.shape[1] > 1:
        top1 = float((out.argmax(dim=1) == ref.argmax(dim=1)).float().mean())
    return Accuracy(max_abs, max_abs / scale if scale > 0 else max_abs, top1)


def tolerance_violation(accuracy: Accuracy, tolerance: float, min_top1_agreement: float) -> str | None:
    """Why `accuracy` is out of tolerance; None when it is acceptable."""
    if accuracy.max_rel_error != accuracy.max_rel_error or accuracy.max_rel_error > tolerance:
        return f"max relative error {accuracy.max_rel_error:.3g} exceeds the tolerance {tolerance:g}"
    top1 = accuracy.top1_agreement
    if top1 is not None and top1 < min_top1_agreement:
        return f"top-1 agreement {top1:.3f} is below {min_top1_agreement:g}"
    return None
