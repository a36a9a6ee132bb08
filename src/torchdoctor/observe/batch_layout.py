"""The layout of a batch the script received: its tensors' shapes and dtypes, without their data.

The hooks keep the first batch's layout (Facts.batch_layout); the hand-off probe rebuilds batches of
zeros laid out as it (observe/probes/handoff.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch
from torch.utils._pytree import tree_leaves

Layout = list[tuple[tuple[int, ...], torch.dtype]]


def batch_layout(batch: Any) -> Layout:
    """Shapes and dtypes of the batch's tensors (torch's pytree: tuples, lists, dicts, namedtuples;
    another Mapping, e.g. a Hugging Face BatchEncoding, by its items). [] when it holds none."""
    if isinstance(batch, Mapping) and not isinstance(batch, dict):
        batch = dict(batch)
    return [(tuple(leaf.shape), leaf.dtype) for leaf in tree_leaves(batch) if isinstance(leaf, torch.Tensor)]


def layout_bytes(layout: Layout) -> int:
    return sum(torch.Size(shape).numel() * dtype.itemsize for shape, dtype in layout)
