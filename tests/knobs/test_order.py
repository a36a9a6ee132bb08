"""The registry and the composition order."""

from __future__ import annotations

import pytest

from torchdoctor.knobs import COMPOSITION_ORDER, REGISTRY, apply_knobs, composition_order


def test_every_registered_knob_has_a_place_in_the_composition_order() -> None:
    assert sorted(REGISTRY) == sorted(COMPOSITION_ORDER)


def test_composition_order_puts_autocast_inside_compile_and_workers_after_worker_options() -> None:
    order = composition_order(["compile", "num_workers", "autocast_bf16", "prefetch_factor"])
    assert order == ["prefetch_factor", "num_workers", "autocast_bf16", "compile"]


def test_an_unknown_knob_is_named_in_the_error() -> None:
    with pytest.raises(KeyError, match="no_such_knob"):
        apply_knobs({"no_such_knob": True})


def test_every_knob_states_its_permanent_code_change() -> None:
    for knob in REGISTRY.values():
        value = {"int": 2, "choice": "foreach" if knob.name == "optimizer_impl" else {}}.get(knob.kind, True)
        assert knob.code_change(value).strip(), knob.name
