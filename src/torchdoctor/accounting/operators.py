"""Which operators are matrix products or convolutions: the compute-bound ones, whose FLOPs the
profiler counts (forward convolutions and matrix products) or leaves out (a convolution's backward),
and which a matrix product's peak measures."""

from __future__ import annotations

import re

_MATRIX = re.compile(r"mm_?\b|matmul|conv|linear|einsum|attention|rnn|lstm|gru", re.IGNORECASE)


def is_matrix(name: str) -> bool:
    """Whether operator `name` is a matrix product, a convolution, an attention or a recurrent layer
    (matrix products per time step: `aten::mm`, `aten::convolution_backward`,
    `aten::scaled_dot_product_attention`, `aten::mkldnn_rnn_layer_backward`)."""
    return bool(_MATRIX.search(name))
