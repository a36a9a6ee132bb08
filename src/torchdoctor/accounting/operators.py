"""Which operators are matrix products or convolutions: the compute-bound ones, whose FLOPs the
profiler counts (forward convolutions and matrix products) or leaves out (a convolution's backward),
and which a matrix product's peak measures; and which only move data, which the copy bandwidth
measures."""

from __future__ import annotations

import re

_MATRIX = re.compile(r"mm_?\b|matmul|conv|linear|einsum|attention|rnn|lstm|gru", re.IGNORECASE)


def is_matrix(name: str) -> bool:
    """Whether operator `name` is a matrix product, a convolution, an attention or a recurrent layer
    (matrix products per time step: `aten::mm`, `aten::convolution_backward`,
    `aten::scaled_dot_product_attention`, `aten::mkldnn_rnn_layer_backward`)."""
    return bool(_MATRIX.search(name))


#: Operators that only move data (copy, fill, concatenate, gather): the copy bandwidth is their speed
#: of light. Any other memory-bound operator computes per element, and never reaches it.
_MOVES_DATA = re.compile(r"^aten::(copy_|_to_copy|_copy_from|_copy_from_and_resize|clone|contiguous|cat|stack"
                         r"|fill_|zero_|index_select|gather|index|repeat|narrow_copy|_unsafe_index)$")


def moves_data(name: str) -> bool:
    """The operator only moves data (copies, fills, concatenates, gathers)."""
    return bool(_MOVES_DATA.match(name))
