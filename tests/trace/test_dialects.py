"""Every trace dialect of the table in docs/trace.md ("Dialects") is read, with a real trace of it
(tests/trace/fixtures, shared/fixtures/traces, or recorded here with the installed torch) or one
derived from a real trace (tests/trace/derive.py), and derived dialects give the same figures as
the trace they were derived from."""

from __future__ import annotations

import functools
import gzip
import json
import warnings
from pathlib import Path
from typing import Any, Callable

import pytest

from torchdoctor.trace import analyse_traces, load_trace
from tests.trace import derive

FIXTURES = Path(__file__).resolve().parent / "fixtures"
TORCH_1_9 = FIXTURES / "torch1.9-cuda-resnet50-workers0.json.gz"

#: fixture -> what the dialect section and the window must say (None: not checked)
REAL = {
    "torch1.8dev-cuda-array-root.2steps.json.gz": dict(root="array", categories="legacy", profiler_step="operator",
                                                       steps=2, mode="main_process", state="ok"),
    "torch1.8-cuda-resnet50-workers4.2steps.json.gz": dict(root="object", categories="legacy", profiler_step="operator",
                                                           steps=2, mode="workers", state="ok"),
    "torch1.8-cuda-autograd-profiler-no-steps.json.gz": dict(root="object", categories="legacy", profiler_step="none",
                                                             steps=1, mode="main_process", state="ok"),
    "torch1.9-cuda-resnet50-workers0.json.gz": dict(root="object", categories="legacy", profiler_step="operator",
                                                    steps=6, mode="main_process", state="ok"),
    "torch1.9-cuda-resnet50-workers4.2steps.json.gz": dict(root="object", categories="legacy", profiler_step="operator",
                                                           steps=2, mode="workers", state="ok"),
    "cuda-2.11.0-resnet18-dataloader0.json.gz": dict(root="object", categories="current", profiler_step="annotation",
                                                     steps=4, mode="main_process", state="ok"),
    "cuda-2.11.0-graph-capture.json.gz": dict(root="object", categories="current", profiler_step="annotation", steps=1,
                                              mode=None, state="capture"),
    "cuda-2.11.0-graph-replay.json.gz": dict(root="object", categories="current", profiler_step="annotation", steps=3,
                                             mode=None, state="ok"),
    "cuda-2.11.0-memory-limit.json.gz": dict(root="object", categories="current", profiler_step="annotation", steps=2,
                                             mode=None, state="ok"),
    "rocm-mi300x-bert-small.json.gz": dict(root="object", categories="current", profiler_step="annotation", steps=1,
                                           mode=None, state="ok"),
    "rocm-mi300x-sglang-graph-capture.json.gz": dict(root="object", categories="current", profiler_step="annotation",
                                                     steps=1, mode=None, state="capture"),
    "rocm-mi300x-vllm-graph-capture-memory.json.gz": dict(root="object", categories="current", profiler_step="none",
                                                          steps=1, mode=None, state="capture"),
    "rocm-mi300x-vllm-graph-replay.json.gz": dict(root="object", categories="current", profiler_step="none", steps=1,
                                                  mode=None, state="ok"),
    "mtia-inference.json.gz": dict(root="object", categories="current", profiler_step="none", steps=1, mode=None,
                                   state="no_device_work"),
    "cuda-cupti-range-profiler.json.gz": dict(root="object", categories="current", profiler_step="none", steps=1,
                                              mode=None, state="no_device_work"),
    "cpu-only-dataloader-workers.json.gz": dict(root="object", categories="current", profiler_step="annotation",
                                                steps=1, mode="workers", state="cpu_only"),
}


@functools.lru_cache(maxsize=4)
def _source(path: Path) -> str:
    with gzip.open(path, "rt") as f:
        return f.read()


@functools.lru_cache(maxsize=2)
def _analyse_cached(path: Path) -> dict[str, Any]:
    return _analyse(path)


def _analyse(path: Path) -> dict[str, Any]:
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # e.g. 0/0 in an operator table
        return analyse_traces([path]).to_dict()


@pytest.mark.parametrize("name", sorted(REAL))
def test_each_real_dialect_is_recognised(name: str) -> None:
    expected = REAL[name]
    report = _analyse(FIXTURES / name)
    rank = report["ranks"][0]
    dialect = rank["dialect"]
    assert (dialect["root"], dialect["categories"], dialect["profiler_step"]) == \
        (expected["root"], expected["categories"], expected["profiler_step"])
    assert rank["steps_count"] == expected["steps"]
    assert dialect["dataloader_mode"] == expected["mode"]
    assert rank["window"]["state"] == expected["state"]
    assert rank["events_count"] > 50
    if expected["profiler_step"] != "none":
        assert not any("no ProfilerStep" in w for w in report["warnings"])


def _derived(derive_fn: Callable[[Any], Any], source: Path, tmp_path: Path) -> Path:
    doc = derive_fn(json.loads(_source(source) if source.suffix == ".gz" else source.read_text()))
    out = tmp_path / f"{derive_fn.__name__}.json"
    out.write_text(json.dumps(doc))
    return out


@pytest.mark.parametrize("derivation", [derive.as_torch_1_10, derive.as_torch_1_13])
def test_a_trace_rewritten_in_a_later_dialect_gives_the_same_figures(derivation: Callable[[Any], Any], tmp_path: Path) -> None:
    """The torch 1.9 trace as torch 1.10-1.12 (cpu_op ProfilerStep) and 1.13+ (user_annotation) write it."""
    original = _analyse_cached(TORCH_1_9)["ranks"][0]
    rewritten = _analyse(_derived(derivation, TORCH_1_9, tmp_path))["ranks"][0]
    assert rewritten["dialect"]["categories"] == "current"
    assert rewritten["dialect"]["profiler_step"] == ("operator" if derivation is derive.as_torch_1_10 else "annotation")
    for key in ("steps_count", "step_us_median", "breakdown_us", "shares", "window"):
        assert rewritten[key] == original[key], key
    assert rewritten["host"]["ops_count"] == original["host"]["ops_count"]


def test_a_datapipe_span_counts_as_loading(cpu_trace: Path, tmp_path: Path) -> None:
    rank = _analyse(_derived(derive.with_datapipe, cpu_trace, tmp_path))["ranks"][0]
    assert rank["dialect"]["dataloader_mode"] == "datapipe"
    assert rank["window"]["dataloader_fraction"] > 0


def test_the_current_cpu_dialect_recorded_here(cpu_trace: Path) -> None:
    """This machine's torch (2.x): user_annotation ProfilerStep and DataLoader spans, CPU only."""
    rank = _analyse(cpu_trace)["ranks"][0]
    assert rank["dialect"]["profiler_step"] == "annotation" and rank["dialect"]["categories"] == "current"
    assert rank["dialect"]["dataloader_mode"] == "main_process" and rank["window"]["state"] == "cpu_only"


def test_categories_it_does_not_know_are_counted_and_named(tmp_path: Path) -> None:
    """An unknown back end's device events: analysed without them, with their counts in a warning."""
    report = _analyse(_derived(derive.with_unknown_device, TORCH_1_9, tmp_path))
    rank = report["ranks"][0]
    assert set(rank["dialect"]["unknown_categories"]) == {"npu_kernel", "npu_memcpy"}
    assert rank["dialect"]["unknown_categories"]["npu_kernel"] == 8772
    assert any("'npu_kernel' (8772)" in w and "does not read" in w for w in report["warnings"])
    assert rank["steps_count"] == 6  # the rest is still analysed


def test_mtia_device_events_are_named_not_silently_dropped() -> None:
    report = _analyse(FIXTURES / "mtia-inference.json.gz")
    assert "mtia_ccp_events" in report["ranks"][0]["dialect"]["unknown_categories"]
    assert any("mtia_ccp_events" in w for w in report["warnings"])


def test_graph_replays_without_their_kernels_are_named(tmp_path: Path) -> None:
    rank = _analyse(_derived(derive.graph_kernels_hidden, FIXTURES / "rocm-mi300x-vllm-graph-replay.json.gz", tmp_path))
    assert rank["ranks"][0]["window"]["state"] == "graph_replay_without_kernels"
    assert any("graph" in w for w in rank["warnings"])


def test_memory_records_give_the_device_peak() -> None:
    trace = load_trace(FIXTURES / "rocm-mi300x-vllm-graph-capture-memory.json.gz")
    (key, peak), = [(k, v) for k, v in trace.memory.items() if k.startswith("hip:")]
    assert key == "hip:0" and peak["peak_allocated_bytes"] > 0.9 * 206_141_652_992 * 0.9


def test_legacy_torch_scopes_are_annotations_not_operators() -> None:
    """In torch 1.8/1.9 ProfilerStep, the DataLoader span and Optimizer.step are `Operator` events;
    they are read as annotations, so they are neither operators in the tables nor their own parents."""
    top = _analyse_cached(TORCH_1_9)["ranks"][0]["host"]["top_by_self_time"]
    names = {op["name"] for op in top}
    assert not any(n.startswith(("ProfilerStep#", "enumerate(DataLoader)#", "Optimizer.step#")) for n in names)
