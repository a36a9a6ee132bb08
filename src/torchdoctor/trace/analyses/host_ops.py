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
    rows = _operator_order(trace, np.flatnonzero(trace.kind == CPU_OP))
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


def _operator_order(trace: Trace, rows: np.ndarray) -> np.ndarray:
    """`rows` with parents before children: by thread, then start, then longer first, then row
    order (np.lexsort of those four keys). The trace's rows are in start order already, so only the
    threads and the few rows that start together on a thread are sorted: the four-key sort spent
    most of its 50 ms per 190,000 operators on the durations and starts."""
    order = rows[np.lexsort((trace.tid[rows], trace.pid[rows]))]
    ts, pid, tid = trace.ts_us[order], trace.pid[order], trace.tid[order]
    same_thread = (pid[1:] == pid[:-1]) & (tid[1:] == tid[:-1])
    if not (same_thread <= (ts[1:] >= ts[:-1])).all():  # rows not in start order (a hand-built trace)
        return rows[np.lexsort((-trace.dur_us[rows], trace.ts_us[rows], trace.tid[rows], trace.pid[rows]))]
    tie = same_thread & (ts[1:] == ts[:-1])
    if tie.any():
        run = np.concatenate(([0], np.cumsum(~tie)))  # runs of rows on one thread with one start
        tied = np.flatnonzero(np.concatenate(([False], tie)) | np.concatenate((tie, [False])))
        order[tied] = order[tied[np.lexsort((-trace.dur_us[order[tied]], run[tied]))]]
    return order


#: Jumping rounds before the rest is walked: real traces need about their nesting depth plus a few
#: (11-20 on the fixtures); a shape that needs more (a very deep nest) is walked in linear time.
_MAX_ROUNDS = 64


def _parents(trace: Trace, rows: np.ndarray) -> np.ndarray:
    """Index (into `rows`) of each operator's innermost enclosing operator, -1 for top level.

    The parent is what the profiler's stack walk finds: on each thread (rows are sorted by thread,
    start, longer first), pop the stack while its top ends by the operator's start. The stack
    below row i-1 is the chain i-1, parent(i-1), parent(parent(i-1)), ..., so the parent of i is
    the last row before it on its thread that ends after it starts: every row after that one was
    popped. Found by pointer jumping (numpy, a round per step for all rows at once; the Python
    walk cost 0.12 s per 190,000 operators, the rounds 0.03 s), the walk kept for what is left.
    """
    ts = trace.ts_us[rows]
    end = ts + trace.dur_us[rows]
    thread = trace.pid[rows] * 1_000_003 + trace.tid[rows]
    before = np.arange(-1, rows.size - 1)  # the row before on the same thread, else -1
    before[np.flatnonzero(thread[1:] != thread[:-1]) + 1] = -1
    if (ts[1:] < ts[:-1])[before[1:] >= 0].any():  # two threads whose keys collide: jumping needs sorted starts
        return _walk(ts, end, before, before.copy(), np.arange(rows.size))
    parent = before.copy()
    _settle_top_level(ts, end, parent)
    left = _jump(ts, end, parent)
    return _walk(ts, end, before, parent, left) if left.size else parent


#: Threads with fewer rows are left to the jumping rounds (a few rounds at most), so that the loop
#: over threads in `_settle_top_level` stays linear in the rows whatever the number of threads.
_SETTLE_MIN_ROWS = 64


def _settle_top_level(ts: np.ndarray, end: np.ndarray, candidate: np.ndarray) -> None:
    """Set `candidate` (each row's row before on its thread, -1 at a thread's first row) to -1 in
    place for the top-level operators: those no earlier operator of their thread ends after the start
    of (the stack walk would find it empty). Jumping reaches -1 for them only after about log2(the
    top-level rows before them) rounds: on a 1 GB trace, 24 rounds of up to a million rows, 0.4 s;
    with them settled first, 10 rounds, 0.15 s."""
    starts = np.flatnonzero(candidate < 0)
    stops = np.append(starts[1:], candidate.size)
    for start, stop in zip(starts.tolist(), stops.tolist()):
        if stop - start >= _SETTLE_MIN_ROWS:
            latest_end = np.maximum.accumulate(end[start : stop - 1])  # over the rows before each row
            candidate[np.flatnonzero(latest_end <= ts[start + 1 : stop]) + start + 1] = -1


def _jump(ts: np.ndarray, end: np.ndarray, candidate: np.ndarray) -> np.ndarray:
    """Move each row's `candidate` (in place) back to its parent; returns the rows not settled
    within _MAX_ROUNDS. Every row between a candidate and its row ends by the row's start; while
    the candidate does too, the row takes the candidate's own candidate, past which the same holds
    (starts are sorted), so each candidate stays on the row's side of its parent. The active rows'
    starts and candidates travel with them (`start`, `up`: candidate[active]), filtered as they are:
    two look-ups at random rows per round, where reading them again from the columns took six."""
    active = np.flatnonzero(candidate >= 0)
    start, up = ts[active], candidate[active]
    for _ in range(_MAX_ROUNDS):
        keep = end[up] <= start
        active, start, up = active[keep], start[keep], up[keep]
        if not active.size:
            break
        up = candidate[up]
        candidate[active] = up
        keep = up >= 0
        active, start, up = active[keep], start[keep], up[keep]
    return active


def _walk(ts: np.ndarray, end: np.ndarray, before: np.ndarray, parent: np.ndarray, todo: np.ndarray) -> np.ndarray:
    """The stack walk itself, for the rows `todo` (ascending), the others' `parent` being final:
    from the row before, up the parents while they end by the row's start. Linear time overall:
    the rows passed over are off every later row's chain."""
    # Sequential by nature (each row may need the parent just found); Python lists index faster than numpy.
    ts_l, end_l, before_l, found = ts.tolist(), end.tolist(), before.tolist(), parent.tolist()
    for i in todo.tolist():
        up = before_l[i]
        while up >= 0 and end_l[up] <= ts_l[i]:
            up = found[up]
        found[i] = up
    return np.array(found, np.int64)


def op_summary(trace: Trace, rows: np.ndarray, self_us: np.ndarray, config: TraceConfig) -> dict[str, Any]:
    """Top operators by self time among `rows` (CPU ops of one window), with small-op figures."""
    return op_summaries(trace, rows, self_us, np.zeros(rows.size, np.int64), 1, config)[0]


#: (window, name) pairs counted at once by `op_summaries`: its arrays stay a few MB whatever the names.
_PAIRS_AT_ONCE = 1 << 20


def op_summaries(trace: Trace, rows: np.ndarray, self_us: np.ndarray, window: np.ndarray, windows_count: int,
                 config: TraceConfig) -> list[dict[str, Any]]:
    """`op_summary` of each window's rows (`window[k]`: row k's, ascending). One bincount per figure
    counts many windows' (window, name) pairs, each bin adding its values in row order as one
    bincount per window does: per-window calls cost more than their work on hundreds of steps."""
    names_count = max(len(trace.names), 1)
    per_chunk = max(1, _PAIRS_AT_ONCE // names_count)
    bounds = np.searchsorted(window, np.arange(windows_count + 1)).tolist()
    out = []
    for first in range(0, windows_count, per_chunk):
        last = min(first + per_chunk, windows_count)
        a, b = bounds[first], bounds[last]
        pair = (window[a:b] - first) * names_count + trace.name_id[rows[a:b]]
        size = (last - first) * names_count
        total = np.bincount(pair, weights=self_us[a:b], minlength=size).reshape(-1, names_count)
        count = np.bincount(pair, minlength=size).reshape(-1, names_count)
        longest = np.zeros(size)
        np.maximum.at(longest, pair, self_us[a:b])  # per-call maximum self time of each operator
        longest = longest.reshape(-1, names_count)
        for w in range(first, last):
            mine = self_us[bounds[w] : bounds[w + 1]]
            out.append(_summary(trace, mine, total[w - first], count[w - first], longest[w - first], config))
    return out


def _summary(trace: Trace, self_us: np.ndarray, total: np.ndarray, count: np.ndarray, longest: np.ndarray,
             config: TraceConfig) -> dict[str, Any]:
    """One window's figures from its operators' self times and its per-name total, count and maximum."""
    seen = np.flatnonzero(count > 0)  # names of other windows (count 0) never enter the list
    top = seen[np.argsort(-total[seen], kind="stable")][: config.top_n]
    small = self_us < config.small_op_us
    return {
        "ops_count": int(self_us.size),
        "self_total_us": float(self_us.sum()),
        "small_ops_count": int(small.sum()),
        "small_ops_self_us": float(self_us[small].sum()),
        "top_by_self_time": [
            {"name": trace.names[i], "count": int(count[i]), "self_us": float(total[i]),
             "mean_self_us": float(total[i] / count[i]), "max_self_us": float(longest[i])}
            for i in top
        ],  # fmt: skip
    }
