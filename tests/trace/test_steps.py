"""Profiler steps (trace/steps.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from torchdoctor.trace import load_trace
from torchdoctor.trace.analyses import host_ops
from torchdoctor.trace.analyses.annotations import PATTERNS, annotation_shares
from torchdoctor.trace.analyses.copies_syncs import sync_calls
from torchdoctor.trace.events import (
    ANNOTATION, CPU_OP, HOST_KINDS, KERNEL, RUNTIME, STEP_NAME_RE, SYNC_CALL_RE, Trace,
)
from torchdoctor.trace.config import TraceConfig
from torchdoctor.trace.intervals import clip, length, merge
from torchdoctor.trace.steps import Step, assign, assign_rows, batches, find_steps, starting_in


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


def _trace(events: list[tuple[str, int, float, float]], tid: list[int] | None = None) -> Trace:
    """A hand-made trace of (name, kind, start, duration) events, in start order as the loader sorts them."""
    names = tuple(dict.fromkeys(e[0] for e in events))
    n, ints = len(events), np.full(len(events), -1, np.int64)
    return Trace(path="t.json", names=names, kind=np.array([e[1] for e in events], np.int8),
                 name_id=np.array([names.index(e[0]) for e in events], np.int32),
                 ts_us=np.array([e[2] for e in events], float), dur_us=np.array([e[3] for e in events], float),
                 pid=np.zeros(n, np.int64), tid=np.array(tid or [1] * n, np.int64), stream=ints,
                 correlation=ints, external_id=ints, bytes=ints)


def test_steps_that_follow_one_another_are_batched_eight_at_a_time() -> None:
    steps = [Step(i, 10.0 * i, 10.0 * i + 10.0) for i in range(20)]
    assert batches(steps) == [list(range(8)), list(range(8, 16)), list(range(16, 20))]


def test_overlapping_steps_go_to_separate_batches_each_in_time_order() -> None:
    steps = [Step(1, 0.0, 10.0), Step(2, 5.0, 20.0), Step(3, 10.0, 12.0), Step(4, 12.0, 30.0), Step(5, 25.0, 26.0)]
    assert batches(steps) == [[0, 2, 3], [1, 4]]


def test_starting_in_gives_each_steps_events_of_the_kinds_asked_that_start_in_it() -> None:
    trace = _trace([("op", CPU_OP, 0.0, 0.0), ("op", CPU_OP, 0.0, 3.0), ("kernel", KERNEL, 1.0, 1.0),
                    ("op", CPU_OP, 4.0, 20.0), ("op", CPU_OP, 10.0, 1.0)])  # fmt: skip
    rows, owner = starting_in(trace, [Step(1, 0.0, 10.0), Step(2, 4.0, 11.0)], HOST_KINDS)
    # the instant at the step's start ends by it (not in its window); row 3 is in both steps
    assert rows.tolist() == [1, 3, 3, 4] and owner.tolist() == [0, 0, 1, 1]


def test_per_step_shares_and_sync_calls_of_overlapping_steps_are_each_steps_own() -> None:
    """Figures computed a batch at a time equal those of each step's window alone (the one-window definition)."""
    rng = np.random.default_rng(3)
    names = ["aten::mm", "## forward ##", "autograd::engine::evaluate_function: X", "cudaStreamSynchronize",
             "ProfilerStep#1"]
    events = [(str(rng.choice(names)), int(rng.choice([CPU_OP, ANNOTATION, RUNTIME])), float(t), float(d))
              for t, d in zip(rng.uniform(0, 100, 300).round(1), rng.exponential(3.0, 300).round(1))]
    steps = [Step(1, 0.0, 40.0), Step(2, 30.0, 70.0), Step(3, 40.0, 40.0), Step(4, 70.0, 100.0)]
    trace = _trace(sorted(events, key=lambda e: e[2]), tid=rng.choice([1, 2], len(events)).tolist())
    shares, syncs = {}, {}
    for batch in batches(steps):
        mine = [steps[i] for i in batch]
        rows, owner = starting_in(trace, mine, HOST_KINDS)
        shares.update(zip(batch, annotation_shares(trace, mine, rows, owner)))
        syncs.update(zip(batch, sync_calls(trace, mine, rows, owner)))
    for i, step in enumerate(steps):
        lo, hi = step.start_us, step.end_us
        rows = np.flatnonzero((trace.ts_us >= lo) & (trace.ts_us < hi) & (trace.end_us > lo))  # events starting in it
        hit = rows[np.isin(trace.kind[rows], (ANNOTATION, CPU_OP)) & trace.name_mask(PATTERNS["forward"], rows)]
        forward = length(clip(merge(trace.ts_us[hit], trace.end_us[hit]), lo, hi))
        assert shares[i]["forward_fraction"] == forward / (step.wall_us or 1.0)
        tids, thread = np.unique(trace.tid[rows], return_inverse=True)
        main = tids[np.argmax(np.bincount(thread, weights=trace.dur_us[rows]))] if rows.size else -1
        busy = rows[(trace.tid[rows] == main) & ~trace.name_mask(STEP_NAME_RE, rows)]
        uncovered = step.wall_us - length(clip(merge(trace.ts_us[busy], trace.end_us[busy]), lo, hi))
        assert shares[i]["python_overhead_fraction"] == uncovered / (step.wall_us or 1.0)
        sync = rows[trace.name_mask(SYNC_CALL_RE, rows)]
        points = merge(trace.ts_us[sync], trace.end_us[sync])
        assert (syncs[i]["count"], syncs[i]["dur_us"]) == (points[0].size, length(points))


def test_per_step_operator_summaries_are_each_steps_own(monkeypatch: pytest.MonkeyPatch) -> None:
    """Summaries computed for many steps at once, a few (step, name) pairs at a time, equal each step's alone."""
    rng = np.random.default_rng(4)
    names = [f"aten::op{i}" for i in range(7)]
    trace = _trace([(str(rng.choice(names)), CPU_OP, float(t), 1.0) for t in range(200)])
    rows, self_us = np.arange(200), rng.exponential(8.0, 200)
    step = np.sort(rng.integers(0, 5, 200))
    step[step == 3] = 4  # a step without operators
    monkeypatch.setattr(host_ops, "_PAIRS_AT_ONCE", 2 * len(trace.names))  # two steps at a time
    config = TraceConfig(top_n=3)
    summaries = host_ops.op_summaries(trace, rows, self_us, step, 5, config)
    for i, summary in enumerate(summaries):
        mine = step == i
        by_name: dict[str, list[float]] = {}
        for name_id, us in zip(trace.name_id[mine].tolist(), self_us[mine].tolist()):
            by_name.setdefault(trace.names[name_id], []).append(us)
        totals = {name: float(np.bincount(np.zeros(len(v), int), weights=v)[0]) for name, v in by_name.items()}
        top = sorted(totals, key=lambda n: (-totals[n], trace.names.index(n)))[:3]
        assert summary["ops_count"] == int(mine.sum()) and summary["self_total_us"] == float(self_us[mine].sum())
        assert summary["small_ops_count"] == int((self_us[mine] < config.small_op_us).sum())
        assert [(t["name"], t["count"], t["self_us"], t["max_self_us"]) for t in summary["top_by_self_time"]] == \
            [(n, len(by_name[n]), totals[n], max(by_name[n])) for n in top]
    assert summaries[3]["ops_count"] == 0 and summaries[3]["top_by_self_time"] == []


def test_every_rows_step_is_the_step_assign_finds_for_its_start() -> None:
    trace = _trace([("op", CPU_OP, float(t), 1.0) for t in (0, 1, 2, 2, 5, 6, 7, 9, 10, 12, 20)])
    for steps in ([Step(1, 2.0, 6.0), Step(2, 6.0, 7.0), Step(3, 9.0, 12.0)],  # back to back, a gap, the end
                  [Step(1, 0.0, 10.0), Step(2, 5.0, 7.0)],  # overlapping: the later start wins, as in assign
                  [Step(1, 1.0, 1.0), Step(2, 1.0, 3.0)], [Step(-1, 0.0, 20.0)], []):
        assert assign_rows(trace, steps).tolist() == assign(trace.ts_us, steps).tolist()
