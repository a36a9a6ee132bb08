"""The worker pool: every task's outcome in order, a task that raises reported as such, a worker
that dies retried once alone and then reported, never a hang (trace/pool.py)."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from torchdoctor.trace.pool import WorkerDied, run_each


def shout(path: str) -> str:
    """A task: the name in capitals; a name with `die` kills its own worker every time, one with
    `once` kills it the first time only (a marker file remembers), one with `bad` raises."""
    name = Path(path).name
    if "die" in name or "once" in name and not _first_time_done(path):
        os.kill(os.getpid(), signal.SIGKILL)
    if "bad" in name:
        raise ValueError(f"{name} is bad")
    return name.upper()


def _first_time_done(path: str) -> bool:
    marker = Path(path + ".tried")
    done = marker.exists()
    marker.touch()
    return done


@pytest.mark.timeout(120)
def test_outcomes_come_back_in_the_items_order_with_a_raising_task_reported(tmp_path: Path) -> None:
    items = [str(tmp_path / n) for n in ("a", "bad", "c", "d")]
    done: list[int] = []
    outcomes = run_each(shout, items, 2, done.append)
    assert [o.value for o in outcomes] == ["A", None, "C", "D"]
    assert isinstance(outcomes[1].error, ValueError) and "bad is bad" in str(outcomes[1].error)
    assert sorted(done) == [0, 1, 2, 3]


@pytest.mark.timeout(120)
def test_a_worker_killed_once_is_retried_and_one_killed_twice_is_reported(tmp_path: Path) -> None:
    items = [str(tmp_path / n) for n in ("a", "once", "die", "d")]
    done: list[int] = []
    outcomes = run_each(shout, items, 2, done.append)
    assert [o.value for o in outcomes] == ["A", "ONCE", None, "D"]
    assert isinstance(outcomes[2].error, WorkerDied)
    assert sorted(done) == [0, 1, 2, 3]  # every task reported once, the retried ones included
