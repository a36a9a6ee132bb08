"""The ranks whose kernels ran slower than the other ranks' on the same work (a slow GPU or node),
told apart from a straggler whose step is long for another reason."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from torchdoctor.trace import analyse_traces
from torchdoctor.trace.analyses.slow_devices import LABEL_CHARS, SLOW_EXCESS, KernelGroups, kernel_groups, slow_devices
from torchdoctor.trace.loader import load_trace

GENERATOR = Path(__file__).resolve().parents[2] / "benchmarks" / "trace_ranks.py"


def _groups(medians: dict[str, float]) -> KernelGroups:
    """A rank's groups: kernel name -> median duration (one launch each, no operator)."""
    names = tuple(medians)
    keys = tuple(name.encode() for name in names)
    values = np.array([medians[n] for n in names], float)
    return KernelGroups(keys, tuple((n, None) for n in names), np.ones(len(names), np.int64), values, values)


BASE = {"gemm": 100.0, "softmax": 20.0, "layernorm": 10.0, "gelu": 8.0, "embedding": 300.0, "adam": 5.0}


def _scaled(factors: dict[str, float]) -> KernelGroups:
    return _groups({name: us * factors.get(name, 1.0) for name, us in BASE.items()})


def test_a_rank_slower_on_every_kernel_group_is_a_slow_device() -> None:
    slow = {name: 1.3 for name in BASE}
    out = slow_devices([0, 1, 2, 3], [_scaled({}), _scaled({}), _scaled(slow), _scaled({})])
    assert out["ranks"] == [2] and out["groups_compared_count"] == len(BASE)
    by_rank = {r["rank"]: r for r in out["by_rank"]}
    assert abs(by_rank[2]["median_excess_fraction"] - 0.3) < 1e-9
    assert by_rank[2]["slower_groups_fraction"] == 1.0 and by_rank[0]["slower_groups_fraction"] == 0.0
    assert out["groups"][0]["kernel"] == "embedding" and out["left_out"] == []


def test_slower_heavy_kernels_alone_or_jitter_below_the_threshold_flag_no_rank() -> None:
    heavy_only = _scaled({"embedding": 2.5, "gemm": 2.0})  # two of six groups: another shard, not another GPU
    jitter = _scaled({name: 1 + SLOW_EXCESS * 0.9 for name in BASE})
    out = slow_devices([0, 1, 2, 3], [_scaled({}), heavy_only, jitter, _scaled({})])
    assert out["ranks"] == []
    assert {r["rank"]: r["slower_groups_fraction"] for r in out["by_rank"]}[1] == 2 / 6


def test_a_rank_without_kernels_or_without_shared_work_is_left_out_with_its_reason() -> None:
    alien = _groups({"other_kernel": 50.0})
    out = slow_devices([0, 1, 2, 3, 4], [_scaled({}), _groups({}), _scaled({}), alien, _scaled({})])
    assert out["left_out"] == [{"rank": 1, "reason": "no computation kernel"},
                               {"rank": 3, "reason": "none of its kernel groups runs on most ranks"}]
    assert [r["rank"] for r in out["by_rank"]] == [0, 2, 4] and out["ranks"] == []


def test_fewer_than_two_ranks_with_kernels_compare_nothing() -> None:
    out = slow_devices([0, 1], [_scaled({}), _groups({})])
    assert out["groups_compared_count"] == 0 and out["by_rank"] == [] and out["ranks"] == []


def test_groups_are_kernel_and_launching_operator_with_each_groups_median(gpu_traces: Path) -> None:
    path = gpu_traces / "a100-ddp2-rank0.json.gz"
    groups = kernel_groups(load_trace(path))
    with gzip.open(path, "rt") as f:
        events = json.load(f)["traceEvents"]
    ops = {e["args"]["External id"]: e["name"] for e in events
           if e.get("cat") == "cpu_op" and "External id" in e.get("args", {})}
    (kernel, op), expected = groups.labels[0], []
    for e in events:
        if e.get("cat") != "kernel":
            continue
        launched_by = ops.get(e["args"].get("External id"), "")[:LABEL_CHARS]  # labels are cut to LABEL_CHARS
        if e["name"][:LABEL_CHARS] == kernel and launched_by == op:
            expected.append(e["dur"])
    assert op is not None and groups.count[0] == len(expected) > 1
    assert groups.median_us[0] == np.median(expected) and groups.total_us[0] == pytest.approx(sum(expected))
    assert list(groups.total_us) == sorted(groups.total_us, reverse=True) and len(groups.keys) <= 32


def test_the_real_ranks_of_one_job_have_no_slow_device(gpu_traces: Path) -> None:
    pair = sorted((gpu_traces / "multirank-sampled").glob("rank-*.json.gz"))
    slow = analyse_traces(pair).to_dict()["multi_rank"]["slow_devices"]
    assert slow["ranks"] == [] and slow["groups_compared_count"] == 20
    assert all(abs(r["median_excess_fraction"]) < SLOW_EXCESS for r in slow["by_rank"])


def _job(folder: Path, gpu_traces: Path, *options: str) -> list[Path]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    subprocess.run([sys.executable, str(GENERATOR), "generate", str(folder), "--mb", "0.1",
                    "--source", str(gpu_traces / "multirank-sampled" / "rank-0.json.gz"), *options],
                   check=True, env=env, timeout=300)  # fmt: skip
    return sorted(folder.glob("rank-*.json"))


def test_a_slowed_gpu_is_found_beside_the_straggler_and_not_in_unmodified_copies(gpu_traces: Path,
                                                                                 tmp_path: Path) -> None:
    slowed = _job(tmp_path / "slowed", gpu_traces, "--ranks", "6", "--slow-device", "2")
    multi = analyse_traces(slowed).to_dict()["multi_rank"]
    assert multi["slow_devices"]["ranks"] == [2]  # its kernels x1.3
    assert multi["stragglers"] == [5]  # its steps x1.3, its kernels as fast as the others': no slow device
    plain = _job(tmp_path / "plain", gpu_traces, "--ranks", "4", "--plain")
    slow = analyse_traces(plain).to_dict()["multi_rank"]["slow_devices"]
    assert slow["ranks"] == [] and {r["median_excess_fraction"] for r in slow["by_rank"]} == {0.0}
