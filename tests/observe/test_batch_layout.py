"""Which dimension of a batch is the batch (observe/batch_layout.py): dimension 0, or 1 for a model
whose sequence layers are all sequence-first, and none when they disagree."""

from __future__ import annotations

import torch

from torchdoctor.observe.batch_layout import AMBIGUOUS, batch_dimension, batch_size


def test_the_batch_size_is_found_in_nested_batches():
    assert batch_size({"ids": torch.zeros(5, 3), "n": 1}) == 5
    assert batch_size([(torch.tensor(1.0), torch.zeros(7, 2))]) == 7
    assert batch_size("text") is None


def test_a_sequence_first_batch_is_the_second_dimension_of_token_ids_or_features_only():
    assert batch_size([torch.zeros(35, 20, dtype=torch.long)], 1) == 20
    assert batch_size(torch.zeros(35, 20, 8), 1) == 20
    assert batch_size(torch.zeros(4, 3, 32, 32), 1) == 4  # an image batch stays batch-first
    assert batch_size(torch.zeros(35, 20), AMBIGUOUS) is None


def test_the_models_sequence_layers_say_its_batch_dimension():
    assert batch_dimension(torch.nn.Sequential(torch.nn.Linear(4, 4))) == 0
    assert batch_dimension(torch.nn.LSTM(4, 4)) == 1
    assert batch_dimension(torch.nn.TransformerEncoder(torch.nn.TransformerEncoderLayer(8, 2), 1,
                                                       enable_nested_tensor=False)) == 1
    assert batch_dimension(torch.nn.GRU(4, 4, batch_first=True)) == 0
    mixed = torch.nn.ModuleList([torch.nn.LSTM(4, 4), torch.nn.MultiheadAttention(4, 2, batch_first=True)])
    assert batch_dimension(mixed) is AMBIGUOUS
