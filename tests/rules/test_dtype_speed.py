"""TD-COMP-040: matrix products in a dtype that this run's device measured slower than float32,
weighed by the operator-costs probe's own peaks; bfloat16 is advised only where the CPU has it."""

from __future__ import annotations

from pathlib import Path

import pytest

from torchdoctor.record import Record
from torchdoctor.rules import diagnose

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "TD-COMP-040"


def _finding(record: Record):
    findings = [f for f in diagnose(record, select=["TD-COMP-040"]).findings if f.id == "TD-COMP-040"]
    return findings[0] if findings else None


def test_the_upside_is_the_time_the_products_save_at_float32s_measured_rate() -> None:
    finding = _finding(Record.load(FIXTURES / "fires.json"))
    ev = finding.evidence
    ratio = ev["peak_flops_per_s_fp32"] / ev["peak_flops_per_s_fp16"]
    assert ev["dtype"] == "fp16" and ratio >= 1.3
    assert finding.upside == pytest.approx(ev["matmul_share_fraction"] * (1 - 1 / ratio), abs=1e-3)


def test_bfloat16_is_named_only_where_the_cpus_isa_computes_it() -> None:
    record = Record.load(FIXTURES / "fires.json")
    assert "avx512_bf16" in record.env["cpu"]["isa_flags"]
    assert "bfloat16" in _finding(record).fix.text
    record.env["cpu"]["isa_flags"] = ["avx2", "avx512f", "fma"]
    assert "bfloat16" not in _finding(record).fix.text + _finding(record).fix.code
    del record.env["cpu"]["isa_flags"]  # an older Record: not known, not advised
    assert "bfloat16" not in _finding(record).fix.text


def test_float64_is_advised_back_to_float32_only() -> None:
    finding = _finding(Record.load(FIXTURES / "fires-fp64.json"))
    assert finding.evidence["dtype"] == "fp64" and "set_default_dtype(torch.float32)" in finding.fix.code
    assert "bfloat16" not in finding.fix.text


def test_a_dtype_the_device_runs_as_fast_as_float32_is_not_a_finding() -> None:
    record = Record.load(FIXTURES / "fires.json")
    rates = record.probes["op_costs"]["peaks"]["flops_per_s"]
    rates["fp16"] = rates["fp32"] * 2  # a GPU's Tensor Cores
    assert _finding(record) is None


def test_on_a_gpu_the_products_are_timed_by_their_flops_at_the_dtypes_peak() -> None:
    # The probe's CPU profile times a GPU operator's launch, not its kernel: FLOPs at the peak instead.
    record = Record.load(FIXTURES / "fires-fp64.json")
    costs = record.probes["op_costs"]
    costs["peaks"].update(device="cuda", flops_per_s={"fp32": 60e12, "fp64": 1e12})
    flops = sum(op["flops"] for op in costs["ops"] if op["dtype"] == "fp64")
    costs["step_s"] = 4 * flops / 1e12  # the fp64 products take a quarter of the step at their peak
    finding = _finding(record)
    assert finding.evidence["device"] == "cuda" and finding.evidence["matmul_share_fraction"] == pytest.approx(0.25)
    assert finding.upside == pytest.approx(0.25 * (1 - 1 / 60), abs=1e-3)
