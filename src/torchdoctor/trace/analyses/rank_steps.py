"""Step times across ranks, step by step: the rank x step matrix and the ranks slow at one step.

A rank slow throughout shows in its median step (`multi_rank.stragglers`, analyses/ranks.py); a
rank slow at step k only (a pause, a checkpoint, a noisy neighbour) shows here: at each step
every rank's wall time is compared with the other ranks' median at that step by the one straggler
definition (ranks.stragglers). Steps are matched by their `ProfilerStep#N` number, so clocks
offset between hosts do not matter.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from torchdoctor.trace.analyses.ranks import stragglers

TOP = 20  # slow (rank, step) pairs listed, by excess


@dataclass(frozen=True)
class StepWalls:
    """One rank's analysed steps: their `ProfilerStep#N` numbers and wall times (us), in time order."""

    numbers: np.ndarray
    wall_us: np.ndarray


def step_matrix(ranks: Sequence[int], walls: Sequence[StepWalls]) -> dict[str, Any]:
    """`ranks` (as given), `steps` (every step number seen, ascending) and `wall_us`: one row per
    rank, one value per step (null where that rank has no such step)."""
    numbers = sorted(set().union(*(w.numbers.tolist() for w in walls)))
    column = {n: i for i, n in enumerate(numbers)}
    rows = []
    for rank_walls in walls:
        row: list[float | None] = [None] * len(numbers)
        for number, wall in zip(rank_walls.numbers.tolist(), rank_walls.wall_us.tolist()):
            row[column[number]] = wall
        rows.append(row)
    return {"ranks": list(ranks), "steps": numbers, "wall_us": rows}


def slow_steps(matrix: dict[str, Any]) -> dict[str, Any]:
    """`count` of (rank, step) pairs whose step time is a straggler's among the ranks at that step,
    and the `top` ones by `excess_us` over the other ranks' median (`rank`, `step`, `wall_us`)."""
    found = []
    for j, number in enumerate(matrix["steps"]):
        timed = [(i, row[j]) for i, row in enumerate(matrix["wall_us"]) if row[j] is not None]
        walls = np.array([w for _, w in timed], float) / 1e6
        if walls.size < 2:
            continue
        for k, excess_s in stragglers(walls, float(np.median(walls))):
            i, wall = timed[k]
            found.append({"rank": matrix["ranks"][i], "step": number, "wall_us": wall, "excess_us": excess_s * 1e6})
    found.sort(key=lambda f: -f["excess_us"])
    return {"count": len(found), "top": found[:TOP]}
