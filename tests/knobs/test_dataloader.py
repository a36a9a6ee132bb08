"""DataLoader knobs intercept construction and are undone."""

from __future__ import annotations

import torch
from torch.utils.data import DataLoader, TensorDataset

from torchdoctor.knobs import apply_knobs

DATA = TensorDataset(torch.arange(16.0))


def test_num_workers_overrides_the_scripts_value_and_undo_restores_it() -> None:
    undo = apply_knobs({"num_workers": 2})
    try:
        assert DataLoader(DATA, batch_size=4, num_workers=0).num_workers == 2
        assert DataLoader(DATA, 4).num_workers == 2  # positional arguments too
    finally:
        undo()
    assert DataLoader(DATA, batch_size=4).num_workers == 0


def test_worker_options_compose_with_num_workers_set_by_a_knob() -> None:
    undo = apply_knobs({"prefetch_factor": 4, "persistent_workers": True, "num_workers": 1})
    try:
        loader = DataLoader(DATA, batch_size=4)
        assert (loader.num_workers, loader.prefetch_factor, loader.persistent_workers) == (1, 4, True)
    finally:
        undo()


def test_worker_options_leave_a_loader_without_workers_alone() -> None:
    undo = apply_knobs({"prefetch_factor": 4})
    try:
        loader = DataLoader(DATA, batch_size=4)  # DataLoader would reject prefetch_factor here
        assert loader.prefetch_factor is None
    finally:
        undo()


def test_batch_size_knob_changes_the_batch() -> None:
    undo = apply_knobs({"batch_size": 8})
    try:
        assert next(iter(DataLoader(DATA, batch_size=4)))[0].shape[0] == 8
    finally:
        undo()
