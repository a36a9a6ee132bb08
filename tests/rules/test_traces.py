"""`diagnose --trace` on the real GPU traces in shared/fixtures/traces: the findings agree with what
the fixtures' README says each trace shows (HolisticTraceAnalysis and TraceLens test data, MIT)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from torchdoctor.workflow import DiagnoseOutputs, diagnose_traces

IDLE_RULES = {"TD-COMP-001", "TD-COMP-002", "TD-COMP-003"}
# file -> (rules that must be found, rules that must not be)
EXPECTED = {
    "a100-ddp2-rank0.json.gz": ({"TD-COMP-001", "TD-COMP-002", "TD-SCALE-001"}, set()),  # idle, waiting on host
    "v100-cnn-gpu-bound.json.gz": (set(), IDLE_RULES),  # GPU-bound: no idle finding
    "a100-transformer-16rank-cudagraph-rank0.json.gz": ({"TD-SCALE-001"}, {"TD-COMP-002"}),  # CPU far ahead
    "a100-alexnet-cudasync.json.gz": ({"TD-COMP-005"}, set()),  # cuda_sync events
    "h100-bert-small-inference.json.gz": ({"TD-COMP-002", "TD-COMP-003"}, set()),  # launch-bound
    "h100-qwen-0.5b-inference.json.gz": (set(), {"TD-COMP-001"}),  # GPU busy 92% of the step
    "mi250-rocm-toy-train.json.gz": ({"TD-COMP-001", "TD-COMP-002"}, set()),  # idle 98.5%, hip launches
    "cpu-only-gloo-rank34.json.gz": (set(), IDLE_RULES),  # no GPU events
    "a100-triton-culaunchkernel.json.gz": (set(), {"TD-COMP-004"}),  # one kernel is not "abnormal"
    "legacy-format-inference.json.gz": ({"TD-COMP-001"}, set()),
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_trace_findings_match_what_the_fixture_shows(gpu_traces: Path, tmp_path: Path, name: str) -> None:
    record = diagnose_traces([gpu_traces / name], DiagnoseOutputs(store_path=tmp_path / "runs.db", save=False))
    found = {f.id for f in record.findings}
    present, absent = EXPECTED[name]
    assert record.kind == "traces"
    assert present <= found and not (absent & found), sorted(found)


def test_two_ranks_of_one_job_get_scale_findings(gpu_traces: Path, tmp_path: Path) -> None:
    ranks = sorted((gpu_traces / "multirank-sampled").glob("rank-*.json.gz"))
    record = diagnose_traces(ranks, DiagnoseOutputs(store_path=tmp_path / "runs.db", save=False))
    assert {"TD-SCALE-001", "TD-SCALE-003"} <= {f.id for f in record.findings}


def test_the_cli_diagnoses_a_trace_without_running_anything(gpu_traces: Path, tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    proc = subprocess.run([sys.executable, "-m", "torchdoctor", "diagnose", "--no-save", "--json", str(out),
                           "--select", "compute", "--trace", str(gpu_traces / "a100-alexnet-cudasync.json.gz")],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    record = orjson.loads(out.read_bytes())
    assert record["kind"] == "traces" and record["findings"][0]["id"] == "TD-COMP-001"
    assert {f["layer"] for f in record["findings"]} == {"compute"}
    assert "TD-COMP-005" in proc.stdout


def test_an_unknown_rule_in_select_is_a_clear_error(gpu_traces: Path, tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "torchdoctor", "diagnose", "--no-save", "--select", "TD-XYZ",
                           "--trace", str(gpu_traces / "legacy-format-inference.json.gz")],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert proc.returncode == 2 and "unknown rule 'TD-XYZ'" in proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
