"""The layout of a batch the script received: its tensors' shapes and dtypes, without their data,
and which of its dimensions is the batch.

The hooks keep the first batch's layout (Facts.batch_layout); the hand-off probe rebuilds batches of
zeros laid out as it (observe/probes/handoff.py). A step's batch size (and so the samples/s) is
the batch dimension's size of the first tensor the step received: dimension 0, except for a model
whose sequence layers are all sequence-first (nn.RNN/LSTM/GRU, nn.Transformer's layers and
nn.MultiheadAttention with `batch_first=False`, fed `[seq_len, batch, ...]` as pytorch/examples'
word_language_model does), whose batch is dimension 1 of a 2- or 3-D input (token ids or features;
an image batch, 4-D, stays batch-first: a detection transformer's encoder is sequence-first behind a
batch-first backbone). A model with sequence layers of both kinds gives no batch size: which
dimension is the batch is ambiguous, and a guess would scale the samples/s by the sequence length.
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


#: Layers with a `batch_first` switch: their input is `[seq_len, batch, ...]` when it is False.
SEQUENCE_LAYERS = (torch.nn.RNNBase, torch.nn.Transformer, torch.nn.TransformerEncoderLayer,
                   torch.nn.TransformerDecoderLayer, torch.nn.MultiheadAttention)
AMBIGUOUS = None


def batch_dimension(module: torch.nn.Module) -> int | None:
    """The batch dimension of `module`'s input: 1 when its sequence layers are all sequence-first,
    0 when none is, AMBIGUOUS (None) when it holds both kinds."""
    firsts = {bool(m.batch_first) for m in module.modules()
              if isinstance(m, SEQUENCE_LAYERS) and hasattr(m, "batch_first")}
    if firsts == {False}:
        return 1
    return AMBIGUOUS if firsts == {False, True} else 0


def batch_size(batch: Any, dimension: int | None = 0) -> int | None:
    """The size of dimension `dimension` (batch_dimension's) of the first tensor found in a batch
    (tensor, sequence or mapping; the first 4 items of each); dimension 1 counts only on a 2- or 3-D
    tensor, else 0 does. None for an AMBIGUOUS dimension, or without a tensor of a dimension."""
    if dimension is AMBIGUOUS:
        return None
    if isinstance(batch, torch.Tensor):
        if dimension == 1 and batch.dim() in (2, 3):
            return int(batch.shape[1])
        return int(batch.shape[0]) if batch.dim() > 0 else None
    if isinstance(batch, Mapping):
        batch = list(batch.values())
    if not isinstance(batch, (list, tuple)):
        return None
    for item in batch[:4]:
        size = batch_size(item, dimension)
        if size is not None:
            return size
    return None
