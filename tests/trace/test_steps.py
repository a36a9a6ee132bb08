"""Profiler steps (trace/steps.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from torchdoctor.trace import load_trace
from torchdoctor.trace.steps import find_steps


def test_a_profiler_step_written_twice_is_kept_once(gpu_traces: Path, derive) -> None:
    def duplicate(doc: dict) -> None:
        steps = [e for e in doc["traceEvents"] if str(e.get("name", "")).startswith("ProfilerStep")]
        doc["traceEvents"].extend(dict(e, dur=e["dur"] / 2) for e in steps)

    path = derive(gpu_traces / "a100-ddp2-rank0.json.gz", duplicate)
    steps = find_steps(load_trace(path))
    assert [s.number for s in steps] == [4, 5, 6]
    assert steps[0].wall_us == pytest.approx(222442.191, abs=0.01)  # the longer copy, as in the file


def test_the_gpu_copy_of_a_profiler_step_is_not_a_second_step(gpu_traces: Path) -> None:
    # The MI250 trace has ProfilerStep#1 as user_annotation and as gpu_user_annotation.
    steps = find_steps(load_trace(gpu_traces / "mi250-rocm-toy-train.json.gz"))
    assert [s.number for s in steps] == [1, 2]


def test_selected_steps_are_inclusive(gpu_traces: Path) -> None:
    steps = find_steps(load_trace(gpu_traces / "v100-cnn-gpu-bound.json.gz"), (102, 104))
    assert [s.number for s in steps] == [102, 103, 104]
