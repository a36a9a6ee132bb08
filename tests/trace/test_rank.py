"""A rank's section lists its first steps in full and counts the others; its totals, and the
cross-rank step matrix, cover every step (trace/rank.py, trace/step_columns.py)."""

from __future__ import annotations

import json
from pathlib import Path

import orjson

from torchdoctor.trace import TraceConfig, analyse_traces


def _many_steps(path: Path, steps: int, rank: int = 0) -> Path:
    """`steps` profiler steps of 100 us, each with a forward annotation, three small operators and a
    synchronising call (every seventh step a longer one), as torch.profiler writes them."""
    events = []
    for n in range(steps):
        t = n * 100.0
        events += [
            {"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{n}", "ts": t, "dur": 90.0},
            {"ph": "X", "cat": "user_annotation", "name": "## forward ##", "ts": t + 5, "dur": 40.0},
            *({"ph": "X", "cat": "cpu_op", "name": f"aten::op{k}", "ts": t + 10 + 10 * k, "dur": 4.0 + k}
              for k in range(3)),
            {"ph": "X", "cat": "cuda_runtime", "name": "cudaStreamSynchronize", "ts": t + 60,
             "dur": 9.0 if n % 7 else 20.0},
        ]  # fmt: skip
    for event in events:
        event.update(pid=1, tid=1)
    doc = {"distributedInfo": {"rank": rank, "world_size": 2}, "traceEvents": events}
    path.write_text(json.dumps(doc))
    return path


_TOTALS = ("steps_count", "step_us_median", "host", "shares", "sync_calls_per_step", "sync_calls", "breakdown_us",
           "window", "events_count")


def test_the_steps_past_the_listed_ones_are_counted_and_the_output_stays_the_same_size(tmp_path: Path) -> None:
    sizes = {}
    for steps in (1_200, 2_400):
        rank = analyse_traces([_many_steps(tmp_path / f"{steps}.json", steps)]).to_dict()["ranks"][0]
        assert rank["steps_count"] == steps and len(rank["steps"]) == 1_000
        assert rank["steps_left_out"] == steps - 1_000
        assert [s["step"] for s in rank["steps"]] == list(range(1_000))  # the first ones, in time order
        sizes[steps] = len(orjson.dumps(rank["steps"]))
    assert sizes[2_400] == sizes[1_200]  # twice the steps, the same per-step output


def test_totals_cover_every_step_whatever_the_section_lists(tmp_path: Path) -> None:
    path = _many_steps(tmp_path / "t.json", 40)
    every = analyse_traces([path]).to_dict()["ranks"][0]
    few = analyse_traces([path], TraceConfig(steps_listed=5)).to_dict()["ranks"][0]
    assert every["steps_left_out"] == 0 and few["steps_left_out"] == 35
    assert few["steps"] == every["steps"][:5]
    assert {k: few[k] for k in _TOTALS} == {k: every[k] for k in _TOTALS}
    # the totals are the listed steps' added up: six long syncs (steps 0, 7, ..., 35) and 34 short
    assert every["sync_calls"]["by_name"] == {"cudaStreamSynchronize": {"count": 40, "dur_us": 6 * 20.0 + 34 * 9.0}}
    assert every["breakdown_us"]["runtime_us"] == sum(s["breakdown_us"]["runtime_us"] for s in every["steps"])
    assert every["shares"]["forward_fraction"] == sum(
        s["host"]["forward_fraction"] * s["wall_us"] for s in every["steps"]) / sum(s["wall_us"] for s in every["steps"])


def test_the_step_matrix_has_every_step_of_every_rank(tmp_path: Path) -> None:
    files = [_many_steps(tmp_path / f"r{rank}.json", 30, rank) for rank in (0, 1)]
    report = analyse_traces(files, TraceConfig(steps_listed=4)).to_dict()
    assert [len(r["steps"]) for r in report["ranks"]] == [4, 4]
    matrix = report["multi_rank"]["step_matrix"]
    assert matrix["steps"] == list(range(30)) and matrix["wall_us"] == [[90.0] * 30, [90.0] * 30]
