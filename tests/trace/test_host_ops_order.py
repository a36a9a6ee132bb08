"""The operator order and parents of `self_times` (trace/analyses/host_ops.py): sorted and found with
shortcuts, they must be exactly the four-key sort's order and what the profiler's stack walk finds,
on every shape, odd ones included."""

from __future__ import annotations

import numpy as np
import pytest

from torchdoctor.trace.analyses import host_ops
from torchdoctor.trace.events import CPU_OP, Trace


def _trace(ts: list[float], dur: list[float], pid: list[int], tid: list[int]) -> Trace:
    n = len(ts)
    ints = np.full(n, -1, np.int64)
    return Trace(path="t.json", names=("op",), kind=np.full(n, CPU_OP, np.int8), name_id=np.zeros(n, np.int32),
                 ts_us=np.array(ts, float), dur_us=np.array(dur, float), pid=np.array(pid, np.int64),
                 tid=np.array(tid, np.int64), stream=ints, correlation=ints, external_id=ints, bytes=ints)


def _stack_walk(trace: Trace, rows: np.ndarray) -> list[int]:
    """The reference: the profiler's stack walk, one operator at a time."""
    parent, stack, current = [], [], None
    for i, row in enumerate(rows.tolist()):
        thread = int(trace.pid[row]) * 1_000_003 + int(trace.tid[row])
        if thread != current:
            stack, current = [], thread
        while stack and trace.ts_us[rows[stack[-1]]] + trace.dur_us[rows[stack[-1]]] <= trace.ts_us[row]:
            stack.pop()
        parent.append(stack[-1] if stack else -1)
        stack.append(i)
    return parent


def _sorted_rows(trace: Trace) -> np.ndarray:
    """Rows in the order self_times walks them: by thread, start, longer first."""
    return np.lexsort((-trace.dur_us, trace.ts_us, trace.tid, trace.pid))


@pytest.mark.parametrize("seed", range(20))
def test_parents_match_the_stack_walk_on_random_overlapping_operators(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = 2000
    ts = rng.integers(0, 400, n).astype(float)  # whole numbers: many equal starts and ends
    dur = rng.choice([0.0, 1.0, 3.0, 10.0, 50.0, 200.0], n)
    trace = _trace(ts.tolist(), dur.tolist(), rng.integers(0, 2, n).tolist(), rng.integers(0, 3, n).tolist())
    rows = _sorted_rows(trace)
    assert host_ops._parents(trace, rows).tolist() == _stack_walk(trace, rows)


def test_a_nest_deeper_than_the_jumping_rounds_is_walked_to_the_same_parents() -> None:
    depth = 3 * host_ops._MAX_ROUNDS
    ts = [float(i) for i in range(depth)] + [1000.0 + i for i in range(depth)]
    dur = [2.0 * depth - 2 * i for i in range(depth)] + [1.0] * depth  # a deep nest, then siblings after it
    trace = _trace(ts, dur, [1] * 2 * depth, [1] * 2 * depth)
    rows = _sorted_rows(trace)
    assert host_ops._parents(trace, rows).tolist() == _stack_walk(trace, rows)


def test_long_runs_of_top_level_operators_and_short_threads_find_the_walks_parents() -> None:
    # thread 1: 300 top-level operators, each with a child and a grandchild (settled before the rounds);
    # thread 2: fewer rows than _SETTLE_MIN_ROWS (left to the rounds); thread 3: one operator
    ts, dur = [], []
    for i in range(300):
        ts += [10.0 * i, 10.0 * i + 1, 10.0 * i + 2]
        dur += [10.0 if i % 7 else 9.0, 5.0, 1.0]  # some end exactly where the next one starts
    short = host_ops._SETTLE_MIN_ROWS - 1
    ts += [float(i) for i in range(short)] + [5.0]
    dur += [1.0 if i % 3 else 4.0 for i in range(short)] + [1.0]
    tid = [1] * 900 + [2] * short + [3]
    trace = _trace(ts, dur, [1] * len(ts), tid)
    rows = _sorted_rows(trace)
    assert host_ops._parents(trace, rows).tolist() == _stack_walk(trace, rows)


def test_threads_whose_keys_collide_share_one_stack_as_in_the_walk() -> None:
    # (pid 0, tid 1_000_003) and (pid 1, tid 0) have the same thread key: the walk does not reset between them
    trace = _trace([5.0, 6.0, 0.0, 7.0], [10.0, 1.0, 100.0, 1.0], [0, 0, 1, 1], [1_000_003, 1_000_003, 0, 0])
    rows = _sorted_rows(trace)
    assert host_ops._parents(trace, rows).tolist() == _stack_walk(trace, rows) == [-1, 0, 1, 2]


def _four_key_order(trace: Trace, rows: np.ndarray) -> np.ndarray:
    return rows[np.lexsort((-trace.dur_us[rows], trace.ts_us[rows], trace.tid[rows], trace.pid[rows]))]


@pytest.mark.parametrize("seed", range(10))
def test_operators_are_ordered_as_the_four_key_sort_orders_them(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = 3000
    ts = np.sort(rng.integers(0, 500, n).astype(float))  # in start order, as the loader sorts a trace; many ties
    trace = _trace(ts.tolist(), rng.choice([0.0, 1.0, 5.0], n).tolist(), rng.integers(-1, 2, n).tolist(),
                   rng.integers(0, 3, n).tolist())
    rows = np.flatnonzero(rng.random(n) < 0.8)
    assert host_ops._operator_order(trace, rows).tolist() == _four_key_order(trace, rows).tolist()


def test_operators_of_a_trace_not_in_start_order_are_ordered_as_the_four_key_sort_orders_them() -> None:
    trace = _trace([5.0, 1.0, 5.0, 3.0], [1.0, 2.0, 3.0, 4.0], [1, 1, 1, 1], [7, 7, 7, 7])
    rows = np.arange(4)
    assert host_ops._operator_order(trace, rows).tolist() == _four_key_order(trace, rows).tolist() == [1, 3, 2, 0]
