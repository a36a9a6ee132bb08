"""`torchdoctor compile -- SCRIPT`: the script as written and with Dynamo disabled."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from tests.observe.helpers import WIDE_ENV

SCRIPT = Path(__file__).resolve().parent / "scripts" / "compiled_breaks.py"


@pytest.mark.slow
def test_breaks_recompiles_and_the_eager_comparison_are_reported(tmp_path):
    out = tmp_path / "compile.json"
    command = [sys.executable, "-m", "torchdoctor", "compile", "--warmup-steps", "3", "--steps", "6", "--rounds", "2",
               "--json", str(out), "--store", str(tmp_path / "runs.db"), "--", str(SCRIPT)]
    proc = subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=tmp_path, env=WIDE_ENV)
    assert proc.returncode == 0, proc.stderr
    result = orjson.loads(out.read_bytes())
    report = result["compile"]
    assert {(b["lineno"], b["reason"]) for b in report["graph_breaks"]} == \
        {(15, "Unsupported Tensor.item() call with capture_scalar_outputs=False")}
    assert any("size mismatch at index 1" in r["guard"] for r in report["recompiles"])
    comparison = result["comparison"]  # two runs a side, each of 6 timed steps
    assert comparison["rounds"] == 2 and len(comparison["verdict"]["a_run_means"]) == 2
    assert comparison["verdict"]["n_a"] == 12 and comparison["verdict"]["n_b"] == 12
    assert comparison["compiled_run_ids"][0] == result["compiled_run_id"]
    assert len(set(comparison["eager_run_ids"] + comparison["compiled_run_ids"])) == 4
    assert comparison["operators"] is not None
    assert "graph breaks" in proc.stdout and "compiled vs eager" in proc.stdout and "2 runs a side" in proc.stdout
    assert result["schema_version"] == 3
    assert {"TD-COMP-022", "TD-COMP-021"} <= {a["id"] for a in result["advice"]}
