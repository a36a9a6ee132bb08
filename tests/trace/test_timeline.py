"""The timeline of one profiled step: which step, which events, the cap, nesting depth, and one per rank."""

from __future__ import annotations

import json
from pathlib import Path

from torchdoctor.trace import load_trace
from torchdoctor.trace.analyses.timeline import RANK_EVENTS_TOTAL, step_timeline
from torchdoctor.trace.analysis import analyse_traces


def _event(name: str, ts: float, dur: float, cat: str = "cpu_op", **args) -> dict:
    return {"ph": "X", "cat": cat, "name": name, "ts": ts, "dur": dur, "pid": 1, "tid": 1, "args": args}


def _trace(tmp_path: Path) -> Path:
    events = [
        _event("ProfilerStep#1", 0, 10, "user_annotation"),
        _event("ProfilerStep#2", 10, 30, "user_annotation"),  # the longest
        _event("ProfilerStep#3", 40, 20, "user_annotation"),  # the median: drawn
        _event("aten::linear", 41, 10), _event("aten::addmm", 42, 8), _event("aten::relu", 52, 2),
        _event("cudaLaunchKernel", 43, 1, "cuda_runtime", correlation=7),
        {**_event("gemm_kernel", 70, 5, "kernel", correlation=7, stream=7), "pid": 0, "tid": 7},
        _event("aten::mm", 12, 5),  # in step 2: not drawn
    ]  # fmt: skip
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"traceEvents": events}))
    return path


def test_the_median_step_is_drawn_with_its_host_events_and_the_device_work_it_launched(tmp_path: Path) -> None:
    timeline = step_timeline(load_trace(_trace(tmp_path))).to_dict()
    assert (timeline["step"], timeline["wall_us"]) == (3, 20.0)
    names = [e["name"] for e in timeline["events"]]
    assert names == ["ProfilerStep#3", "aten::linear", "aten::addmm", "cudaLaunchKernel", "aten::relu", "gemm_kernel"]
    assert [e["depth"] for e in timeline["events"]] == [0, 1, 2, 3, 1, 0]
    assert [lane["kind"] for lane in timeline["lanes"]] == ["host", "device"]
    assert timeline["span_us"] == 35.0  # the kernel runs after the step's host window (70 + 5 - 40)


def test_the_cap_keeps_the_longest_events_and_counts_the_rest(tmp_path: Path) -> None:
    timeline = step_timeline(load_trace(_trace(tmp_path)), max_events=3)
    assert [e["name"] for e in timeline.events] == ["ProfilerStep#3", "aten::linear", "aten::addmm"]
    assert (timeline.events_count, timeline.dropped_count) == (6, 3)


def test_a_gpu_trace_gives_host_and_device_lanes_within_the_cap(gpu_traces: Path) -> None:
    trace = load_trace(gpu_traces / "a100-ddp2-rank0.json.gz")
    timeline = step_timeline(trace, max_events=500)
    assert len(timeline.events) == 500 and timeline.dropped_count == timeline.events_count - 500
    assert {lane["kind"] for lane in timeline.lanes} == {"host", "device"}
    starts = [e["start_us"] for e in timeline.events]
    assert starts == sorted(starts) and min(starts) >= 0
    every = sorted((e["dur_us"] for e in step_timeline(trace, max_events=10**9).events), reverse=True)
    assert min(e["dur_us"] for e in timeline.events) == every[499]
    assert timeline.events[0]["name"].startswith("ProfilerStep#")


def test_a_named_step_is_drawn_when_the_trace_has_it_else_the_median(tmp_path: Path) -> None:
    trace = load_trace(_trace(tmp_path))
    assert (step_timeline(trace, step_number=2).step, step_timeline(trace, step_number=2).wall_us) == (2, 30.0)
    assert step_timeline(trace, step_number=99).step == 3


def test_several_ranks_get_the_first_files_step_each_within_a_shared_cap(gpu_traces: Path) -> None:
    files = [gpu_traces / "multirank-sampled" / f"rank-{r}.json.gz" for r in (1, 0)]  # rank 1 first
    report = analyse_traces(files).to_dict()
    first, ranks = report["timeline"], report["rank_timelines"]
    assert first == step_timeline(load_trace(files[0])).to_dict()  # unchanged: the first file, 600 events
    assert [t["rank"] for t in ranks] == [0, 1]
    assert {t["step"] for t in ranks} == {first["step"]}
    assert sum(len(t["events"]) for t in ranks) <= RANK_EVENTS_TOTAL
    assert all(len(t["events"]) == RANK_EVENTS_TOTAL // 2 < t["events_count"] for t in ranks)
    assert all(min(e["start_us"] for e in t["events"]) == 0 for t in ranks)  # each aligned at its step start


def test_one_file_has_no_rank_timelines(tmp_path: Path) -> None:
    report = analyse_traces([_trace(tmp_path)]).to_dict()
    assert report["timeline"]["step"] == 3 and report["rank_timelines"] == []
