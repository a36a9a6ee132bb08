"""Figures across ranks: step times, the slowest rank, stragglers, compute/communication imbalance.

Ranks are compared by durations, never by timestamps, so clocks offset between hosts do not
matter. Per rank: `step_us_median` (median ProfilerStep wall time), `compute_us` and
`comm_us` (unions of computation and communication kernels, HTA's kernel types with modern NCCL
names). A straggler is a rank whose median step is slower than the median over ranks by more
than `TraceConfig.straggler_threshold_fraction`; communication wait on the others is the tell:
the fast ranks spend the difference inside collectives waiting for it. `least_comm_rank` is
HTA's straggler signal: the rank with the least communication-kernel time arrives last at the
collectives (null without communication kernels).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from torchdoctor.trace.config import TraceConfig


def rank_summary(per_rank: list[dict[str, Any]], config: TraceConfig) -> dict[str, Any]:
    """`per_rank`: dicts with `rank`, `step_us_median`, `compute_us`, `comm_us`."""
    timed = [r for r in per_rank if r.get("step_us_median")]
    if len(timed) < 2:
        return {"ranks_count": len(per_rank)}
    steps = np.array([r["step_us_median"] for r in timed])
    median = float(np.median(steps))
    slowest = timed[int(np.argmax(steps))]
    limit = median * (1 + config.straggler_threshold_fraction)
    compute = np.array([r.get("compute_us") or 0.0 for r in timed])
    comm = np.array([r.get("comm_us") or 0.0 for r in timed])
    return {
        "ranks_count": len(per_rank),
        "step_us_median_over_ranks": median,
        "slowest_rank": slowest["rank"],
        "slowest_rank_excess_fraction": slowest["step_us_median"] / median - 1 if median else 0.0,
        "stragglers": [r["rank"] for r in timed if r["step_us_median"] > limit],
        "compute_imbalance_fraction": _spread(compute),
        "comm_imbalance_fraction": _spread(comm),
        "least_comm_rank": timed[int(np.argmin(comm))]["rank"] if comm.max() > 0 else None,
        "per_rank": [
            {k: r.get(k) for k in ("rank", "step_us_median", "compute_us", "comm_us")} for r in timed
        ],
    }


def _spread(values: np.ndarray) -> float:
    """(max - min) / max: 0 when balanced."""
    top = float(values.max())
    return (top - float(values.min())) / top if top else 0.0
