"""analyse_traces on CPU-only traces recorded here, and the report's contract (trace/analysis.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from torchdoctor.trace import SCHEMA_VERSION, TraceConfig, analyse_traces


def test_every_profiler_step_gets_a_breakdown_that_sums_to_its_wall_time(cpu_trace: Path) -> None:
    report = analyse_traces([cpu_trace]).to_dict()
    rank = report["ranks"][0]
    assert rank["steps_count"] == 4 and rank["device"] is None
    for step in rank["steps"]:
        assert sum(step["breakdown_us"].values()) == pytest.approx(step["wall_us"], rel=1e-9)
        assert step["breakdown_us"]["kernel_us"] == 0


def test_host_figures_name_the_model_operators_and_loop_phases(cpu_trace: Path) -> None:
    rank = analyse_traces([cpu_trace]).to_dict()["ranks"][0]
    top = {op["name"] for op in rank["host"]["top_by_self_time"]}
    assert "aten::addmm" in top
    step = rank["steps"][0]["host"]
    assert 0 < step["dataloader_fraction"] < 1
    assert 0 < step["forward_fraction"] < 1
    assert 0 < step["backward_fraction"] < 1
    assert 0 < step["optimizer_fraction"] < 1
    every_op = analyse_traces([cpu_trace], TraceConfig(top_n=1000)).to_dict()["ranks"][0]["host"]
    assert every_op["self_total_us"] == pytest.approx(sum(op["self_us"] for op in every_op["top_by_self_time"]))


def test_operator_counts_and_self_times_agree_with_torch_profiler(cpu_trace: Path) -> None:
    torch_figures = json.loads(cpu_trace.with_suffix(".key_averages.json").read_text())
    top = analyse_traces([cpu_trace], TraceConfig(top_n=1000)).to_dict()["ranks"][0]["host"]["top_by_self_time"]
    for op in top:
        count, self_us = torch_figures[op["name"]]
        assert op["count"] == count, op["name"]
        assert op["self_us"] == pytest.approx(self_us, rel=0.01, abs=1.0), op["name"]


def test_pageable_copies_are_counted(gpu_traces: Path) -> None:
    # The AlexNet trace's 16 memcpys are all `Memcpy HtoD (Pageable -> Device)` (its events).
    device = analyse_traces([gpu_traces / "a100-alexnet-cudasync.json.gz"]).to_dict()["ranks"][0]["device"]
    assert device["pageable_memcpy"]["count"] == device["pageable_memcpy"]["htod_count"] == 16
    assert device["pageable_memcpy"]["dtoh_count"] == 0


def test_small_op_storms_are_flagged_against_the_threshold(cpu_trace: Path) -> None:
    storm = analyse_traces([cpu_trace], TraceConfig(small_op_us=1e9, small_op_storm_per_step=5)).to_dict()
    calm = analyse_traces([cpu_trace], TraceConfig(small_op_us=0.0)).to_dict()
    assert all(s["host"]["small_op_storm"] for s in storm["ranks"][0]["steps"])
    assert not any(s["host"]["small_op_storm"] for s in calm["ranks"][0]["steps"])


def test_step_selection_keeps_only_the_requested_steps(cpu_trace: Path) -> None:
    all_steps = [s["step"] for s in analyse_traces([cpu_trace]).to_dict()["ranks"][0]["steps"]]
    chosen = analyse_traces([cpu_trace], TraceConfig(steps=(all_steps[1], all_steps[2]))).to_dict()
    assert [s["step"] for s in chosen["ranks"][0]["steps"]] == all_steps[1:3]


def test_a_trace_without_profiler_steps_is_one_window_with_a_warning(cpu_trace_no_steps: Path) -> None:
    report = analyse_traces([cpu_trace_no_steps]).to_dict()
    assert [s["step"] for s in report["ranks"][0]["steps"]] == [-1]
    assert any("no ProfilerStep" in w for w in report["warnings"])


def test_the_report_is_json_with_a_schema_version(gpu_traces: Path) -> None:
    report = analyse_traces([gpu_traces / "a100-alexnet-cudasync.json.gz"]).to_dict()
    assert json.loads(json.dumps(report))["schema_version"] == SCHEMA_VERSION


def test_sync_calls_are_counted_once_per_sync_point(gpu_traces: Path) -> None:
    rank = analyse_traces([gpu_traces / "a100-alexnet-cudasync.json.gz"]).to_dict()["ranks"][0]
    syncs = rank["steps"][0]["sync_calls"]
    assert syncs["count"] > 0
    assert syncs["count"] <= sum(v["count"] for v in syncs["by_name"].values())


def test_gpu_utilisation_of_a_gpu_bound_step_is_high(gpu_traces: Path) -> None:
    steps = analyse_traces([gpu_traces / "v100-cnn-gpu-bound.json.gz"]).to_dict()["ranks"][0]["steps"]
    assert steps[-1]["gpu_utilisation_fraction"] > 0.9


def _long_sections(monkeypatch: pytest.MonkeyPatch, steps: int) -> None:
    """Every rank's section lists `steps` steps, as a long profile's does, however short the trace
    analysed: a real step's figures, each float jittered (to the nanosecond, as measured times are)."""
    import random

    import torchdoctor.trace.rank_task as rank_task

    real, rng = rank_task.analyse_rank, random.Random(0)

    def jittered(value):
        if isinstance(value, dict):
            return {k: jittered(v) for k, v in value.items()}
        if isinstance(value, list):
            return [jittered(v) for v in value]
        return round(value * rng.uniform(0.9, 1.1), 3) if isinstance(value, float) else value

    def analyse_rank(trace, config):
        section, walls = real(trace, config)
        section["steps"] = [{**jittered(section["steps"][0]), "step": n} for n in range(steps)]
        return section, walls

    monkeypatch.setattr(rank_task, "analyse_rank", analyse_rank)


def _peak_combining(monkeypatch: pytest.MonkeyPatch, path: Path, ranks: int) -> int:
    """Peak bytes traced while `analyse_traces` combines `ranks` copies of one rank's result, each
    a fresh copy as a worker process sends it (pickled), and keeps the report."""
    import gc
    import pickle
    import tracemalloc

    import torchdoctor.trace.analysis as analysis
    from torchdoctor.trace.pool import Outcome
    from torchdoctor.trace.rank_task import RankTask, analyse_file

    first = analyse_file(RankTask(str(path), TraceConfig(), ranks, draw_first=True))
    step = first.first_timeline["step"] if first.first_timeline else None
    rest = pickle.dumps(analyse_file(RankTask(str(path), TraceConfig(), ranks, step=step)))
    sent = [pickle.dumps(first)] + [rest] * (ranks - 1)  # the first file draws the single-file timeline
    monkeypatch.setattr(analysis, "gather_ranks", lambda *_: [Outcome(value=pickle.loads(s)) for s in sent])
    gc.collect()
    tracemalloc.start()
    try:
        report = analyse_traces([str(path)] * ranks, jobs=2)
        assert len(report.files) == ranks
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_the_combining_process_holds_each_ranks_steps_compressed_not_as_dicts(
        monkeypatch: pytest.MonkeyPatch, gpu_traces: Path) -> None:
    # 120 steps: ~0.85 MB a rank as dicts; compressed ~50 KB, with its timeline and kernel groups ~85 KB
    _long_sections(monkeypatch, steps=120)
    path = sorted((gpu_traces / "multirank-sampled").glob("rank-*.json.gz"))[0]
    few, many = (_peak_combining(monkeypatch, path, ranks) for ranks in (4, 20))
    assert (many - few) / 16 < 150_000
