"""`torchdoctor load --sweep` end to end: real server processes, real load, configs written."""

from __future__ import annotations

import subprocess
import sys

import orjson

from torchdoctor.serve.sweep import SweepPoint, choose
from torchdoctor.serve.load import LoadResult


def test_a_sweep_measures_each_setting_and_recommends_one_within_budget(tmp_path, repo_root) -> None:
    out = tmp_path / "sweep.json"
    command = [sys.executable, "-m", "torchdoctor", "load", "--sweep", "tests.serve.models:moody",
               "--max-batch-sizes", "1,8", "--max-delays-ms", "2", "--clients", "8", "--requests", "80",
               "--duration", "20", "--latency-budget-ms", "5000", "--emit-configs", str(tmp_path / "cfg"),
               "--json", str(out)]
    done = subprocess.run(command, cwd=repo_root, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-2000:]
    data = orjson.loads(out.read_bytes())
    assert data["schema_version"] == 1
    assert [(p["max_batch_size"], p["load"]["ok"]) for p in data["points"]] == [(1, 80), (8, 80)]
    assert set(data["points"][0]["load"]["batch_sizes"]) == {"1"}
    assert data["recommended"]["max_batch_size"] in (1, 8) and "recommended:" in done.stdout
    pbtxt = (tmp_path / "cfg" / "config.pbtxt").read_text()
    assert f"max_batch_size: {data['recommended']['max_batch_size']}" in pbtxt


def _point(batch: int, qps: float, p99_s: float, errors: dict | None = None) -> SweepPoint:
    load = LoadResult(url="u", mode="closed", sent=1, ok=1, errors=errors or {}, duration_s=1,
                      achieved_qps=qps, latency_s_p50=p99_s / 2, latency_s_p99=p99_s)
    return SweepPoint(batch, 1.0, load)


def test_the_choice_is_the_fastest_error_free_setting_within_the_budget() -> None:
    points = [_point(1, 100, 0.004), _point(8, 400, 0.009), _point(32, 900, 0.030), _point(16, 950, 0.008, {"503": 2})]
    best, reason = choose(points, latency_budget_ms=10)
    assert best.max_batch_size == 8 and "400 QPS" in reason
    assert choose(points, latency_budget_ms=1)[0] is None
