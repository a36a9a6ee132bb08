"""Figures across ranks: step times, the slowest rank, stragglers, compute/communication imbalance.

Ranks are compared by durations, never by timestamps, so clocks offset between hosts do not
matter. Per rank: `step_us_median` (median ProfilerStep wall time), `compute_us` and
`comm_us` (unions of computation and communication kernels, HTA's kernel types with modern NCCL
names). `least_comm_rank` is HTA's straggler signal: the rank with the least communication-kernel
time arrives last at the collectives (null without communication kernels).

The one definition of a straggler, also used by the per-rank analysis of observed runs
(`torchdoctor.distributed.analysis`): :func:`stragglers`. Imbalance is :func:`spread`.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

#: A straggler's load exceeds the median load of the other ranks by more than this share of the
#: median step time over ranks ...
STRAGGLER_EXCESS = 0.10
#: ... and by more than this many seconds: below it a per-step difference is within the scheduling
#: jitter of a shared host (measured: about 1 ms between the ranks of a balanced gloo DDP job on a
#: loaded 2-core machine).
STRAGGLER_MIN_S = 0.005


def stragglers(loads_s: Sequence[float], median_step_s: float) -> list[tuple[int, float]]:
    """`(index, excess_s)` of every straggler among the ranks' `loads_s` (seconds per step; the step
    time itself, or the work outside the synchronising backward for ranks in lockstep): a rank whose
    load exceeds the median load of the other ranks (`excess_s`) by more than STRAGGLER_EXCESS of
    `median_step_s` and by more than STRAGGLER_MIN_S."""
    loads = np.asarray(loads_s, dtype=float)
    if len(loads) < 2:
        return []
    limit = max(STRAGGLER_EXCESS * median_step_s, STRAGGLER_MIN_S)
    excess = [float(loads[i] - np.median(np.delete(loads, i))) for i in range(len(loads))]
    return [(i, e) for i, e in enumerate(excess) if e > limit]


def spread(values: Sequence[float]) -> float:
    """Imbalance over ranks, (max - min) / max: 0 when balanced (or all zero)."""
    array = np.asarray(values, dtype=float)
    top = float(array.max()) if len(array) else 0.0
    return (top - float(array.min())) / top if top > 0 else 0.0


def rank_summary(per_rank: list[dict[str, Any]]) -> dict[str, Any]:
    """`per_rank`: dicts with `rank`, `step_us_median`, `compute_us`, `comm_us`."""
    timed = [r for r in per_rank if r.get("step_us_median")]
    if len(timed) < 2:
        return {"ranks_count": len(per_rank)}
    steps = np.array([r["step_us_median"] for r in timed])
    median = float(np.median(steps))
    slowest = timed[int(np.argmax(steps))]
    compute = np.array([r.get("compute_us") or 0.0 for r in timed])
    comm = np.array([r.get("comm_us") or 0.0 for r in timed])
    return {
        "ranks_count": len(per_rank),
        "step_us_median_over_ranks": median,
        "slowest_rank": slowest["rank"],
        "slowest_rank_excess_fraction": slowest["step_us_median"] / median - 1 if median else 0.0,
        "stragglers": [timed[i]["rank"] for i, _ in stragglers(steps / 1e6, median / 1e6)],
        "compute_imbalance_fraction": spread(compute),
        "comm_imbalance_fraction": spread(comm),
        "least_comm_rank": timed[int(np.argmin(comm))]["rank"] if comm.max() > 0 else None,
        "per_rank": [
            {k: r.get(k) for k in ("rank", "step_us_median", "compute_us", "comm_us")} for r in timed
        ],
    }
