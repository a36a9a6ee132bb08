"""Compile modes against eager: variants, what cannot run here, and the real script compiled by the knob."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from tests.observe.helpers import WIDE_ENV
from torchdoctor.compile.modes import UnknownCompileModeError, Variant, not_applicable, parse_modes, variants
from torchdoctor.errors import TorchDoctorError
from torchdoctor.record import Record

SCRIPTS = Path(__file__).resolve().parent / "scripts"


def test_modes_are_parsed_and_checked():
    assert parse_modes("default, max-autotune") == ["default", "max-autotune"]
    with pytest.raises(UnknownCompileModeError, match="fast.*choose from default, reduce-overhead"):
        parse_modes("default,fast")
    assert issubclass(UnknownCompileModeError, TorchDoctorError)


def test_dynamic_tries_each_mode_both_ways():
    assert variants(["default"], dynamic=False) == [Variant("default", None)]
    assert variants(["default", "max-autotune"], dynamic=True) == [
        Variant("default", False), Variant("default", True), Variant("max-autotune", False), Variant("max-autotune", True)]


def test_a_variant_is_the_compile_knob_added_to_the_observation():
    knobs = Variant("max-autotune", True).knobs({"threads": 2}, "eager")
    assert knobs == {"threads": 2, "compile": {"mode": "max-autotune", "dynamic": True, "backend": "eager"}}


def test_cuda_graph_modes_and_self_compiling_scripts_are_not_applicable_with_the_reason():
    cpu = Record(env={"devices": {"cuda_available": False}})
    gpu = Record(env={"devices": {"cuda_available": True}})
    assert "CUDA graphs" in not_applicable(Variant("reduce-overhead", None), cpu)
    assert not_applicable(Variant("reduce-overhead", None), gpu) is None
    assert not_applicable(Variant("max-autotune", None), cpu) is None
    compiled = Record(env=gpu.env, compile={"graph_count": 1})
    assert "calls torch.compile itself" in not_applicable(Variant("default", None), compiled)


@pytest.mark.slow
def test_a_script_without_torch_compile_is_compiled_in_each_mode_and_compared_with_eager(tmp_path):
    out = tmp_path / "compile.json"
    command = [sys.executable, "-m", "torchdoctor", "compile", "--warmup-steps", "2", "--steps", "5", "--no-profile",
               "--modes", "default,reduce-overhead", "--dynamic", "--backend", "eager", "--rounds", "1",
               "--json", str(out), "--no-save",
               "--store", str(tmp_path / "store" / "runs.db"), "--", str(SCRIPTS / "eager_train.py")]
    proc = subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=tmp_path, env=WIDE_ENV)
    assert proc.returncode == 0, proc.stderr
    result = orjson.loads(out.read_bytes())
    rows = {(r["mode"], r["dynamic"]): r for r in result["modes"]}
    assert list(rows) == [("default", False), ("default", True), ("reduce-overhead", False), ("reduce-overhead", True)]
    for dynamic in (False, True):
        row = rows[("default", dynamic)]
        assert row["status"] == "measured" and row["run_id"] not in (None, result["eager_run_id"])
        assert row["compile_time_s"] > 0 and row["graph_count"] >= 1 and row["graph_break_count"] == 0
        assert row["verdict"]["n_a"] == row["verdict"]["n_b"] == 5 and row["step_s"] > 0
        assert row["verdict"]["verdict"].startswith(("faster", "slower", "no clear difference"))
        assert rows[("reduce-overhead", dynamic)]["status"] == "not_applicable"
        assert "CUDA graphs" in rows[("reduce-overhead", dynamic)]["reason"]
    assert result["compiled_run_id"] == rows[("default", False)]["run_id"] and result["compile"]["frames"]
    assert result["comparison"]["eager_run_id"] == result["eager_run_id"]
    assert "torch.compile modes vs eager" in proc.stdout and "not applicable" in proc.stdout
    assert not (tmp_path / "store").exists()  # --no-save: neither the store nor a run folder beside it
