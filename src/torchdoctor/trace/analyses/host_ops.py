"""Host-side operators: self time by name (top N), counts, and small-op storms.

Self time of a CPU operator = its duration minus the durations of the CPU operators directly
nested in it on the same thread (runtime calls and annotations are not subtracted, as in
torch.profiler's `self_cpu_time_total`). An operator belongs to the window containing its start.
A *small op* has a self time under `TraceConfig.small_op_us`; a step with more small ops than
`small_op_storm_per_step` is a storm (many tiny operators: fusion or torch.compile candidates).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from torchdoctor.trace.config import TraceConfig
from torchdoctor.trace.events import CPU_OP, Trace


def self_times(trace: Trace) -> tuple[np.ndarray, np.ndarray]:
    """Rows of CPU operators and each one's self time (us).

    An operator whose only child is an operator of the same name (a dispatch duplicate) is
    folded into that child's parent, as torch.profiler's `key_averages` does, so counts match
    the profiler's own table; self times add up the same either way.
    """
    rows = np.flatnonzero(trace.kind == CPU_OP)
    # Parents before children: by thread, then start, then longer first.
    order = np.lexsort((-trace.dur_us[rows], trace.ts_us[rows], trace.tid[rows], trace.pid[rows]))
    rows = rows[order]
    parent = _parents(trace, rows)
    has_parent = parent >= 0
    child_sum = np.bincount(parent[has_parent], weights=trace.dur_us[rows[has_parent]], minlength=rows.size)
    self_us = np.maximum(trace.dur_us[rows] - child_sum, 0.0)
    children = np.bincount(parent[has_parent], minlength=rows.size)
    names = trace.name_id[rows]
    duplicate = has_parent & (children[np.clip(parent, 0, None)] == 1) & (names == names[np.clip(parent, 0, None)])
    for i in np.flatnonzero(duplicate)[::-1]:  # deepest first, so chains fold into their top
        self_us[parent[i]] += self_us[i]
    return rows[~duplicate], self_us[~duplicate]


def _parents(trace: Trace, rows: np.ndarray) -> np.ndarray:
    """Index (into `rows`) of each operator's innermost enclosing operator, -1 for top level."""
    # A stack walk is inherently sequential; numpy has no vector form of it.
    ts, end = trace.ts_us[rows].tolist(), (trace.ts_us[rows] + trace.dur_us[rows]).tolist()
    thread = (trace.pid[rows] * 1_000_003 + trace.tid[rows]).tolist()
    parent = [-1] * rows.size
    stack: list[int] = []
    current = None
    for i in range(rows.size):
        if thread[i] != current:
            stack, current = [], thread[i]
        while stack and end[stack[-1]] <= ts[i]:
            stack.pop()
        if stack:
            parent[i] = stack[-1]
        stack.append(i)
    return np.array(parent, np.int64)


def op_summary(trace: Trace, rows: np.ndarray, self_us: np.ndarray, config: TraceConfig) -> dict[str, Any]:
    """Top operators by self time among `rows` (CPU ops of one window), with small-op figures."""
    names = trace.name_id[rows]
    total = np.bincount(names, weights=self_us, minlength=len(trace.names))
    count = np.bincount(names, minlength=len(trace.names))
    longest = np.zeros(len(trace.names))
    np.maximum.at(longest, names, self_us)  # per-call maximum self time of each operator
    present = np.flatnonzero(count > 0)  # names of other windows (count 0) never enter the table
    top = present[np.argsort(-total[present], kind="stable")[: config.top_n]]
    small = self_us < config.small_op_us
    return {
        "ops_count": int(rows.size),
        "self_total_us": float(self_us.sum()),
        "small_ops_count": int(small.sum()),
        "small_ops_self_us": float(self_us[small].sum()),
        "top_by_self_time": [
            {"name": trace.names[i], "count": int(count[i]), "self_us": float(total[i]),
             "mean_self_us": float(total[i] / count[i]), "max_self_us": float(longest[i])}
            for i in top
        ],  # fmt: skip
    }
