"""Cross-rank analyses from the ranks' summaries: the ranks slow at one step, and which rank arrived
last at each collective and how long the others waited (analyses/rank_steps.py, collectives.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from torchdoctor.trace import analyse_traces
from torchdoctor.trace.analyses.collectives import RankCollectives, lateness
from torchdoctor.trace.analyses.rank_steps import StepWalls, slow_steps, step_matrix


def _walls(walls: dict[int, float]) -> StepWalls:
    return StepWalls(np.array(list(walls), np.int64), np.array(list(walls.values())))


def test_a_rank_slow_at_one_step_is_found_at_that_step_only() -> None:
    ranks = [_walls({1: 100_000.0, 2: 100_000.0, 3: 100_000.0}) for _ in range(4)]
    ranks[2] = _walls({1: 100_000.0, 2: 130_000.0, 3: 100_000.0})  # rank 2, step 2: 30 ms over the others
    ranks.append(_walls({1: 100_000.0, 3: 100_000.0}))  # rank 4 lacks step 2
    matrix = step_matrix(range(5), ranks)
    assert matrix["steps"] == [1, 2, 3] and matrix["wall_us"][4] == [100_000.0, None, 100_000.0]
    found = slow_steps(matrix)
    assert found == {"count": 1, "top": [{"rank": 2, "step": 2, "wall_us": 130_000.0, "excess_us": 30_000.0}]}


def test_the_rank_with_the_shortest_collective_arrived_last_and_the_others_waited() -> None:
    # Three ranks, two all-reduces and one all-gather; ends aligned, so the shortest kernel arrived last.
    ops = ("AllReduce", "AllGather", "AllReduce")
    ranks = [RankCollectives(ops, np.array(d)) for d in ([500.0, 80.0, 300.0], [100.0, 90.0, 310.0],
                                                          [400.0, 20.0, 700.0])]  # fmt: skip
    out = lateness([0, 1, 2], ranks)
    assert out["matched_count"] == 3
    assert out["last_count_by_rank"] == [{"rank": 0, "count": 1}, {"rank": 1, "count": 1}, {"rank": 2, "count": 1}]
    assert out["top"][0] == {"operation": "AllReduce", "index": 0, "last_rank": 1, "waited_us": 700.0,
                             "max_wait_us": 400.0}  # fmt: skip
    assert [w["waited_us"] for w in out["waited_us_by_rank"]] == [400.0 + 60.0 + 0.0, 0.0 + 70.0 + 10.0,
                                                                  300.0 + 0.0 + 400.0]  # fmt: skip


def test_real_ranks_one_slowed_at_one_step(gpu_traces: Path, derive) -> None:
    rank0 = sorted((gpu_traces / "multirank-sampled").glob("rank-*.json.gz"))[0]

    def as_rank(rank: int, slow_step: str = ""):
        def edit(doc: dict) -> None:
            doc["distributedInfo"]["rank"] = rank
            for event in doc["traceEvents"]:
                if event.get("name") == slow_step:
                    event["dur"] *= 1.3
        return edit

    files = [rank0, derive(rank0, as_rank(2), "r2.json.gz"), derive(rank0, as_rank(3, "ProfilerStep#552"), "r3.json.gz")]
    multi = analyse_traces(files).to_dict()["multi_rank"]
    assert [(s["rank"], s["step"]) for s in multi["slow_steps"]["top"]] == [(3, 552)]
    assert multi["collectives"]["matched_count"] == 10
    assert all(t["waited_us"] == 0.0 for t in multi["collectives"]["top"])  # identical kernels: nobody waited
