"""Tensor Core alignment: GEMM and convolution sizes that Tensor Cores serve only when aligned.

Source: NVIDIA's Deep Learning Performance guide ("Matrix Multiplication Background", "Tensor Core
requirements": fp16/bf16 dimensions multiples of 8, TF32 multiples of 4, int8 multiples of 16,
since cuBLAS 11 / cuDNN 7.6.3 a misaligned size still runs on Tensor Cores but less efficiently)
and PyTorch's AMP recipe ("make sure that layer sizes are multiples of 8").
"""

from __future__ import annotations

import re

from torchdoctor.environment import LayerShape
from torchdoctor.rules.base import Fix, Hit, MissingEvidence, rule
from torchdoctor.rules.evidence import Evidence

MIN_CAPABILITY = (7, 0)  # Volta: the first Tensor Cores
ALIGNMENT = {"float16": 8, "bfloat16": 8, "float32": 4, "int8": 16}  # elements, by weight dtype
MIN_CONV_IN_CHANNELS = 8  # the first convolution's 1-4 image channels are padded by cuDNN itself
UNALIGNED_WARNING = 0.25  # share of the model's Linear/Conv weights in misaligned layers
_GEMM = re.compile(r"gemm|conv|cutlass|xmma|implicit|wgrad|dgrad", re.IGNORECASE)


def _tensor_core_gpu(ev: Evidence) -> bool:
    return any((g.compute_capability or (0, 0)) >= MIN_CAPABILITY for g in ev.devices().gpus)


def _misaligned(shape: LayerShape) -> bool:
    align = ALIGNMENT.get(shape.dtype or "")
    if align is None:
        return False  # float64 and others never run on Tensor Cores
    n_in, n_out = shape.sizes
    skip_in = shape.in_channels is not None and n_in < MIN_CONV_IN_CHANNELS
    return (n_in % align and not skip_in) or n_out % align != 0


def _gemm_share(ev: Evidence) -> float | None:
    """Share of device time in GEMM/convolution kernels, when the trace has a device section."""
    try:
        return sum(k.share_fraction for k in ev.device().kernels.top if _GEMM.search(k.name))
    except MissingEvidence:
        return None


@rule("TD-COMP-015", "compute")
def unaligned_tensor_core_dims(ev: Evidence) -> Hit | None:
    """Linear/Conv sizes that are not multiples of 8 (fp16/bf16; 4 for TF32, 16 for int8) on a GPU
    with Tensor Cores (compute capability >= 7.0). NVIDIA DL performance guide, Tensor Core
    requirements. Severity warning only when misaligned layers hold a large share of the weights
    and GEMM/convolution kernels a large share of device time; the upside is that share of GEMM
    time, an upper bound (padding does not remove the work, only the misalignment penalty)."""
    if not _tensor_core_gpu(ev) or not ev.uses_gpu():
        return None
    shapes = ev.layer_shapes()
    weight = lambda s: s.sizes[0] * s.sizes[1] * s.count  # noqa: E731
    total = sum(weight(s) for s in shapes)
    bad = [s for s in shapes if _misaligned(s)]
    if not bad or not total:
        return None
    bad_share = sum(weight(s) for s in bad) / total
    gemm = _gemm_share(ev)
    upside = bad_share * (gemm or 0.0)
    severity = "warning" if bad_share >= UNALIGNED_WARNING and (gemm or 0.0) >= UNALIGNED_WARNING else "info"
    examples = [f"{s.type}({s.sizes[0]}, {s.sizes[1]}) {s.dtype} x{s.count}" for s in bad[:4]]
    return Hit(severity, f"{len(bad)} layer shape(s) not Tensor Core aligned ({bad_share:.0%} of the weights)",
               upside, {"misaligned_layers": examples, "misaligned_weight_fraction": round(bad_share, 4),
                        "gemm_kernel_share_fraction": round(gemm, 4) if gemm is not None else None},
               "Tensor Cores work on tiles of 8 (16-bit), 4 (TF32) or 16 (int8) elements; other sizes "
               "fall back to slower kernels or waste part of each tile.",
               Fix("Round hidden sizes, vocabularies and channel counts up to a multiple of 8 (64 is better).",
                   "vocab_size = (vocab_size + 63) // 64 * 64  # pad; ignore the extra logits\n"
                   "nn.Linear(in_features, 1024)              # instead of 1000"))
