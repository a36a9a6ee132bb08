"""The capability table's device rows: Tensor Cores by compute capability, AMD Matrix Cores by gfx
architecture, a CPU's bf16 by its ISA flags; unknown devices say so."""

from __future__ import annotations

from pathlib import Path

import pytest

from torchdoctor.capability import cpu_precision, gpu_precision, host_isa_flags, precision_isa_flags


@pytest.mark.parametrize("capability", [(7, 0), (7, 5)])
def test_volta_and_turing_run_fp16_only(capability: tuple[int, int]) -> None:
    row = gpu_precision(capability, "Tesla V100-SXM2-32GB")
    assert (row.fp16, row.bf16, row.tf32, row.fp8) == (True, False, False, False) and row.known


@pytest.mark.parametrize(("capability", "fp8"), [((8, 0), False), ((8, 6), False), ((8, 9), True), ((9, 0), True)])
def test_ampere_and_later_add_bf16_and_tf32_and_ada_and_hopper_fp8(capability: tuple[int, int], fp8: bool) -> None:
    row = gpu_precision(capability, "NVIDIA GPU")
    assert (row.fp16, row.bf16, row.tf32, row.fp8) == (True, True, True, fp8)
    assert row.device == f"sm{capability[0]}{capability[1]}"


def test_a_gpu_before_volta_has_no_tensor_cores() -> None:
    row = gpu_precision((6, 0), "Tesla P100")
    assert row.known and not any((row.fp16, row.bf16, row.tf32, row.fp8))


def test_an_unknown_capability_or_none_says_not_known() -> None:
    for row in (gpu_precision((11, 0), "future"), gpu_precision(None, None)):
        assert not row.known and row.bf16 is None and row.tf32 is None
        assert "not known" in row.describe() and "bf16" not in row.describe()


@pytest.mark.parametrize(("name", "capability", "arch", "fp8"), [
    ("AMD Instinct MI300X", (9, 4), "gfx942", True), ("", (9, 4), "gfx942", True),
    ("AMD Instinct MI250X", (9, 0), "gfx90a", False), ("AMD Instinct MI100", (9, 0), "gfx908", False)])
def test_amd_gpus_by_architecture(name: str, capability: tuple[int, int], arch: str, fp8: bool) -> None:
    row = gpu_precision(capability, name, rocm=True)
    assert row.device == arch and row.bf16 and row.fp16 and row.fp8 is fp8 and not row.tf32


def test_an_amd_gpu_whose_capability_is_shared_by_several_architectures_is_not_guessed() -> None:
    row = gpu_precision((9, 0), "AMD Radeon Graphics")  # gfx906 (no matrix cores), gfx908, gfx90a
    assert not row.known and row.bf16 is None


def test_a_cpu_has_bf16_only_where_its_isa_flags_say_so() -> None:
    assert cpu_precision(frozenset({"avx512f", "avx512_bf16"})).bf16 is True
    assert cpu_precision(frozenset({"avx512f", "amx_bf16", "amx_tile"})).bf16 is True
    assert cpu_precision(frozenset({"avx2", "avx512f"})).bf16 is False
    unknown = cpu_precision(None)
    assert unknown.bf16 is None and not unknown.known and unknown.fp16 is False


def test_the_isa_flags_are_read_from_cpuinfo(tmp_path: Path) -> None:
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\nflags\t\t: fpu sse2 avx512f amx_bf16\n\nprocessor\t: 1\n")
    assert host_isa_flags(cpuinfo) == frozenset({"fpu", "sse2", "avx512f", "amx_bf16"})
    assert host_isa_flags(tmp_path / "absent") is None


def test_a_record_keeps_only_the_flags_that_say_which_precisions_the_cpu_computes() -> None:
    flags = frozenset({"fpu", "sse2", "avx2", "avx512f", "avx512_bf16", "sha_ni", "f16c"})
    assert precision_isa_flags(flags) == ("avx2", "avx512_bf16", "avx512f", "f16c")
    assert precision_isa_flags(frozenset({"asimd", "asimdhp", "bf16", "aes"})) == ("asimd", "asimdhp", "bf16")
    assert precision_isa_flags(None) is None
