"""`torchdoctor comm`: a real gloo sweep on two ranks through torch.distributed.run, and its judgement."""

from __future__ import annotations

import subprocess
import sys

import orjson
import pytest

from torchdoctor.distributed.comm import CommConfig, build_document
from torchdoctor.distributed.errors import CommError
from tests.observe.helpers import WIDE_ENV


@pytest.mark.slow
def test_gloo_sweep_on_two_ranks_gives_consistent_bandwidths(tmp_path):
    out = tmp_path / "comm.json"
    command = [sys.executable, "-m", "torchdoctor", "comm", "--backend", "gloo", "--nproc-per-node", "2",
               "--max-bytes", "65536", "--step-factor", "16", "--iters", "3", "--warmup", "1", "--json", str(out)]
    proc = subprocess.run(command, capture_output=True, text=True, timeout=120, cwd=tmp_path, env=WIDE_ENV)
    assert proc.returncode == 0, proc.stderr
    doc = orjson.loads(out.read_bytes())
    assert doc["schema_version"] == 2 and doc["backend"] == "gloo" and doc["world_size"] == 2
    assert doc["expected_busbw_gb_per_s"] is None  # no theoretical figure for gloo on loopback
    assert list(doc["collectives"]) == ["all_reduce", "all_gather", "reduce_scatter", "broadcast", "all_to_all"]
    for op, result in doc["collectives"].items():
        assert result["supported"], result["reason"]
        assert [r["size_bytes"] for r in result["rows"]] == [8, 128, 2048, 32768]
        for row in result["rows"]:
            assert row["correct"], (op, row)
            assert row["algbw_gb_per_s"] == pytest.approx(row["size_bytes"] / (row["time_us"] * 1e3))
            assert row["busbw_gb_per_s"] == pytest.approx(row["algbw_gb_per_s"] * result["bus_factor"])
    assert doc["collectives"]["all_reduce"]["bus_factor"] == 1.0  # 2(n-1)/n at n = 2
    assert "busbw (GB/s)" in proc.stdout and "all_to_all" in proc.stdout


def _raw(device_name: str | None, busbw: float, supported: bool = True) -> dict:
    row = {"size_bytes": 1 << 20, "count": 1 << 18, "time_us": 10.0, "algbw_gb_per_s": busbw,
           "busbw_gb_per_s": busbw, "correct": True}
    result = {"supported": supported, "reason": None if supported else "not supported", "rows": [row] if supported else []}
    return {"meta": {"world_size": 2, "device": "cuda", "device_name": device_name, "nnodes": 1},
            "collectives": {"all_reduce": result}}


def test_unsupported_collectives_are_reported_not_dropped():
    doc = build_document(_raw(None, 0.0, supported=False), CommConfig(), "gloo")
    assert doc["collectives"]["all_reduce"]["supported"] is False
    [finding] = doc["findings"]
    assert finding["id"] == "TD-SCALE-011" and finding["layer"] == "scale" and finding["severity"] == "warning"
    assert finding["evidence"] == {"collective": "all_reduce", "backend": "gloo"}
    assert finding["title"] == "all_reduce is not supported by gloo: not supported" and finding["fix"]["text"]


def test_wrong_results_are_a_problem_finding():
    raw = _raw(None, 1.0)
    raw["collectives"]["all_reduce"]["rows"][0]["correct"] = False
    [finding] = build_document(raw, CommConfig(), "gloo")["findings"]
    assert finding["id"] == "TD-SCALE-012" and finding["severity"] == "problem"
    assert finding["evidence"]["wrong_sizes_bytes"] == [1 << 20]


def test_bandwidth_far_below_a_known_interconnect_is_a_finding():
    slow = build_document(_raw("NVIDIA H100 80GB HBM3", 40.0), CommConfig(), "nccl")
    assert slow["expected_busbw_gb_per_s"] == 450.0
    [finding] = slow["findings"]
    assert finding["id"] == "TD-SCALE-013" and finding["upside"] == 0.0  # a sweep has no training step
    assert finding["evidence"]["peak_busbw_gb_per_s"] == 40.0 and finding["evidence"]["expected_busbw_gb_per_s"] == 450.0
    assert "nvidia-smi topo -m" in finding["fix"]["code"]
    healthy = build_document(_raw("NVIDIA H100 80GB HBM3", 380.0), CommConfig(), "nccl")
    assert healthy["findings"] == []
    unknown = build_document(_raw("NVIDIA H100 PCIe", 1.0), CommConfig(), "nccl")
    assert unknown["expected_busbw_gb_per_s"] is None and unknown["findings"] == []


def test_bad_options_are_refused_before_launching():
    with pytest.raises(CommError, match="unknown collective"):
        CommConfig(ops=["gossip"])
    with pytest.raises(CommError, match="min-bytes"):
        CommConfig(min_bytes=64, max_bytes=8)
    proc = subprocess.run([sys.executable, "-m", "torchdoctor", "comm", "--backend", "mpi"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "unknown backend" in proc.stderr and "Traceback" not in proc.stderr
