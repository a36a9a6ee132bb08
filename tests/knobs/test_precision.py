"""The precision knobs and the compile knob are offered only where the capability table says the
device and the torch have what they apply."""

from __future__ import annotations

import pytest
import torch

from torchdoctor.knobs import REGISTRY
from torchdoctor.record import Record


def _record(gpu: dict | None = None, device: str = "cuda") -> Record:
    return Record(env={"models": [{"parameter_dtypes": {"float32": 10}, "parameter_devices": {device: 10}}],
                       "devices": {"cuda_available": gpu is not None, "gpu_count": int(gpu is not None),
                                   "gpus": [gpu] if gpu else []},
                       "torch": {"float32_matmul_precision": "highest"}})


def _offered(record: Record) -> set[str]:
    return {name for name in ("autocast_bf16", "autocast_fp16", "tf32") if REGISTRY[name].applies(record)}


@pytest.mark.parametrize(("gpu", "offered"), [
    ({"name": "Tesla V100", "capability": "7.0"}, {"autocast_fp16"}),
    ({"name": "Tesla T4", "capability": "7.5"}, {"autocast_fp16"}),
    ({"name": "NVIDIA A100", "capability": "8.0"}, {"autocast_bf16", "tf32"}),
    ({"name": "NVIDIA H100", "capability": "9.0"}, {"autocast_bf16", "tf32"}),
    ({"name": "AMD Instinct MI250X", "capability": "9.0"}, {"autocast_bf16"}),
    ({"name": "a GPU without its capability"}, {"autocast_fp16"})])
def test_each_gpu_is_offered_the_precisions_it_runs(gpu: dict, offered: set[str]) -> None:
    assert _offered(_record(gpu)) == offered


@pytest.mark.parametrize(("flags", "offered"), [
    (frozenset({"avx512f", "avx512_bf16"}), {"autocast_bf16"}), (frozenset({"avx2"}), set()), (None, set())])
def test_a_cpu_is_offered_bf16_only_where_its_isa_has_it(monkeypatch: pytest.MonkeyPatch,
                                                         flags: frozenset[str] | None, offered: set[str]) -> None:
    monkeypatch.setattr("torchdoctor.knobs.precision.host_isa_flags", lambda: flags)
    assert _offered(_record(None, "cpu")) == offered


def test_compile_is_not_offered_where_torch_lacks_it(monkeypatch: pytest.MonkeyPatch) -> None:
    record = Record(env={"models": [{"parameter_dtypes": {"float32": 10}, "parameter_devices": {"cpu": 10}}]})
    assert REGISTRY["compile"].applies(record)
    monkeypatch.setattr(torch, "__version__", "1.13.1")
    assert not REGISTRY["compile"].applies(record)
