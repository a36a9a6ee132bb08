"""The compile knob's values: each mode the guides name for the device, and dynamic shapes where
the steps' input sizes vary."""

from __future__ import annotations

from torchdoctor.knobs import REGISTRY
from torchdoctor.record import Record


def _record(sizes: list[int], cuda: bool = False) -> Record:
    return Record(env={"models": [{"class": "Net"}], "devices": {"cuda_available": cuda},
                       "distributed_runtime": {"step_elements": sizes}})


def test_fixed_input_sizes_try_static_shapes_only() -> None:
    choices = REGISTRY["compile"].choices(_record([512] * 9 + [100]))  # a last partial batch is not "varying"
    assert choices == [{"mode": "default", "dynamic": False}]


def test_varying_input_sizes_also_try_dynamic_shapes() -> None:
    choices = REGISTRY["compile"].choices(_record([512, 640, 384, 512, 768, 256]))
    assert choices == [{"mode": "default", "dynamic": False}, {"mode": "default", "dynamic": True}]


def test_on_a_gpu_the_guides_modes_are_tried_and_cuda_graphs_only_with_static_shapes() -> None:
    choices = REGISTRY["compile"].choices(_record([512, 640, 384, 512, 768, 256], cuda=True))
    assert {"mode": "reduce-overhead", "dynamic": False} in choices
    assert {"mode": "max-autotune", "dynamic": True} in choices
    assert {"mode": "reduce-overhead", "dynamic": True} not in choices
