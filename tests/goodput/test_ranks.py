"""The ranks of a torchrun job over time: a rank whose steps take longer than the others' over a
stretch is a straggler, with its steps, when, its own time a step against the others' and the run
time lost; under a collective each step the ranks' step times are alike and the wait sampled in
the collective (under DDP, in backward) tells the straggler; alike ranks, a short blip and a
profiler window are no straggler."""

from __future__ import annotations

import pytest

from torchdoctor.goodput.ranks import RankSteps, job_breakdown, stragglers
from torchdoctor.goodput.stream import Frame, RunStream, Stack

SCRIPT = "/work/train.py"
WAIT, WORK = 0, 1  # stack ids: waiting in all_reduce, the script's own work


def _run(durations: list[float], *, waiting: set[int] = frozenset(), per_step: int = 2,
         profiled: list[tuple[int, int]] = (), ddp: bool = False) -> RunStream:
    """A rank's stream: its steps' times, `per_step` stack samples in each, those of the steps in
    `waiting` in `distributed_c10d:all_reduce` but one (`ddp`: in autograd's engine, the model
    DistributedDataParallel's)."""
    run = RunStream(start_unix_s=100.0)
    t = 1.0
    run.ends[0] = t
    for i, d in enumerate(durations, start=1):
        t += d
        run.ends[i] = t
    run.marks.append({"name": "lean_start", "step": 5, "t_s": 1.0, "sync_in_backward": ddp})
    run.marks.append({"name": "script_end", "step": len(durations) + 1, "t_s": t + 0.1, "how": "script_finished"})
    run.stacks = {WAIT: _stack("graph:_engine_run_backward" if ddp else "distributed_c10d:all_reduce"),
                  WORK: _stack("time:sleep")}
    run.samples = [(i, WAIT if i in waiting and k else WORK) for i in range(1, len(durations) + 1)
                   for k in range(per_step)]
    run.profiled = list(profiled)
    return run


def _stack(leaf: str) -> Stack:
    return Stack(leaf, (Frame(SCRIPT, "train", 10),))


def _found(runs: dict[int, RunStream], step_s: float = 0.01, wall_s: float = 10.0):
    return stragglers({rank: RankSteps.of(run, 0.0) for rank, run in runs.items()}, step_s, wall_s)


SLOW = range(300, 400)  # the stretch in which rank 1 is slow


def test_a_rank_slower_over_a_stretch_is_a_straggler_with_when_and_by_how_much():
    even = [0.01] * 800
    slow = [0.05 if i + 1 in SLOW else 0.02 if i + 1 == 270 else 0.01 for i in range(800)]  # and a blip near
    (found,) = _found({0: _run(even), 1: _run(slow), 2: _run(even)})
    assert (found.rank, found.first_step, found.last_step) == (1, 300, 399)  # its steps, not its stretches'
    assert found.step_s == pytest.approx(0.05) and found.others_step_s == pytest.approx(0.01)
    assert found.lost_s == pytest.approx(100 * 0.04)
    assert found.start_s == pytest.approx(1.0 + sum(slow[:found.first_step - 1]))


def test_under_a_collective_each_step_the_rank_the_others_waited_for_is_the_straggler():
    alike = [0.05 if i + 1 in SLOW else 0.01 for i in range(800)]  # every rank waits for rank 1
    waiting = set(SLOW)  # ... in all_reduce, most of each slow step
    runs = {0: _run(alike, waiting=waiting, per_step=5), 1: _run(alike, per_step=5)}
    (found,) = _found(runs)
    assert (found.rank, found.first_step, found.last_step) == (1, 300, 399)
    # rank 0's own: a fifth of its samples in each slow step were its own work
    assert found.step_s == pytest.approx(0.05) and found.others_step_s == pytest.approx(0.01)
    assert found.lost_s == pytest.approx(100 * 0.04)


def test_under_ddp_the_wait_in_backward_is_the_wait_only_when_the_model_is_ddp_s():
    alike = [0.05 if i + 1 in SLOW else 0.01 for i in range(800)]
    (found,) = _found({0: _run(alike, waiting=set(SLOW), per_step=5, ddp=True), 1: _run(alike, per_step=5, ddp=True)})
    assert (found.rank, found.first_step, found.last_step) == (1, 300, 399)
    # without DDP, time in backward is the rank's own work: alike ranks
    backward = {0: _run(alike, waiting=set(SLOW), per_step=5), 1: _run(alike, per_step=5)}
    backward[0].stacks[WAIT] = _stack("graph:_engine_run_backward")
    assert _found(backward) == []


def test_alike_ranks_a_short_blip_and_a_profiler_window_are_no_straggler():
    even = [0.01] * 800
    blip = [0.02 if i == 500 else 0.01 for i in range(800)]
    windowed = [0.1 if 600 <= i < 606 else 0.01 for i in range(800)]
    assert _found({0: _run(even), 1: _run(even)}) == []
    assert _found({0: _run(even), 1: _run(blip)}) == []
    assert _found({0: _run(even), 1: _run(windowed, profiled=[(600, 607)])}) == []
    assert _found({0: _run(even)}) == []


def test_a_job_s_breakdown_is_rank_0_s_with_every_rank_s_goodput():
    even = [0.01] * 800
    slow = [0.05 if i + 1 in SLOW else 0.01 for i in range(800)]
    whole = job_breakdown({0: _run(even), 1: _run(slow)}, 100.0, 114.0)
    assert [(r.rank, r.steps, r.step_s) for r in whole.ranks] == [(rank, 801, pytest.approx(0.01)) for rank in (0, 1)]
    # both ran 800 steady steps' worth; rank 1's slow steps beyond that are badput
    assert whole.ranks[0].goodput_s == pytest.approx(whole.ranks[1].goodput_s) == pytest.approx(8.0)
    assert whole.parts == job_breakdown({0: _run(even)}, 100.0, 114.0).parts
    assert [s.rank for s in whole.stragglers] == [1]
    assert job_breakdown({0: _run(even)}, 100.0, 112.0).ranks == [] and job_breakdown({}, None, None) is None
