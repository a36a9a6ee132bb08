"""The ranks of a torchrun job over time (`torchdoctor watch --nproc-per-node N`): each rank's
goodput, and the stragglers, the stretches of the run in which one rank's steps were slower than
the others'.

Under a collective each step (an `all_reduce`, a `barrier`), every rank waits for the slowest, so
their step times come out equal; what differs is where the time went. A rank's *own* time a step
is therefore its step time less the share of its stack samples that were waiting in a collective
(the innermost frame in `torch.distributed`'s `distributed_c10d`; with a DistributedDataParallel
model, whose gradients are reduced inside `backward`, in autograd's engine as well): the
straggler's own time is its step time, the others' is what is left after their wait. Without
collectives the own time is the step time, and a slow rank is simply the one whose steps take
longer. Under DDP, a rank slower in `backward` itself is therefore not told from one waiting there.

The steps from the lean observation's start on every rank are cut into stretches of about half a
second (enough stack samples to weigh the wait), the steps of a periodic profiler window on any
rank left out; in a stretch a rank straggles when its own time a step is `RATIO` times the other
ranks' median or more. Adjacent straggling stretches of one rank make one straggler, its steps
then narrowed (or widened, by up to a stretch) to the longest run of its steps that took `RATIO`
times its median step or more, and measured again over them: kept when the time it cost (its excess a step
over the others' times the steps) is `MIN_SHARE` of the run's wall time or more.
"""

from __future__ import annotations

import statistics
from bisect import bisect_right
from dataclasses import dataclass, replace
from math import ceil

from torchdoctor.goodput.breakdown import breakdown, run_clock
from torchdoctor.goodput.section import RankRun, Straggler, WholeRun
from torchdoctor.goodput.stream import RunStream

RATIO = 1.25  # a rank's own time a step this many times the others' median straggles
MIN_SHARE = 0.01  # a straggler costing less than this share of the wall time is not reported
STRETCH_S = 0.5  # seconds of steps in a stretch (about ten stack samples at the default interval)
MAX_STRETCHES = 2000
KEEP = 10  # the stragglers kept, the costliest
_GAP = 3  # slow steps this far apart at most are one straggler's (a noisy step elsewhere is not)
_MIN_SAMPLES = 3  # fewer samples in a stretch: its wait is not weighed (taken as none)
_COLLECTIVE_LEAVES = ("distributed_c10d:", "c10d_logger:")
# DDP waits for the other ranks at the end of `backward` (torch.autograd's engine, called from
# graph.py, or from autograd/__init__.py before torch 2.4)
_BACKWARD_LEAVES = ("graph:_engine_run_backward", "__init__:backward")


def job_breakdown(runs: dict[int, RunStream], spawn_unix_s: float | None, exit_unix_s: float | None, *,
                  disk_bytes: int = 0) -> WholeRun | None:
    """The whole run of the lowest rank streamed (rank 0's, as `breakdown` makes it), with every
    rank's goodput and the stragglers when more than one rank streamed (None: no stream)."""
    if not runs:
        return None
    wholes = {rank: breakdown(run, spawn_unix_s, exit_unix_s, disk_bytes=disk_bytes if rank == min(runs) else 0)
              for rank, run in sorted(runs.items())}
    first = wholes[min(wholes)]
    if len(runs) < 2:
        return first
    steps = {rank: RankSteps.of(run, run_clock(run, spawn_unix_s, exit_unix_s).offset_s) for rank, run in runs.items()}
    return replace(first, ranks=[_rank_run(rank, w) for rank, w in sorted(wholes.items())],
                   stragglers=stragglers(steps, first.step_s, first.wall_s))


def _rank_run(rank: int, whole: WholeRun) -> RankRun:
    return RankRun(rank=rank, wall_s=whole.wall_s, ended=whole.ended, steps=whole.steps, step_s=whole.step_s,
                   goodput_s=whole.goodput_s)


@dataclass(frozen=True, slots=True)
class RankSteps:
    """One rank's steps on the run's clock: the step indices whose end time is known (one by one,
    and the last of each block), their ends, the steps its stack samples fell in and which of
    those were waiting in a collective, the steps its profiler windows touched."""

    index: list[int]
    end_s: list[float]
    sampled: list[int]
    waiting: list[int]
    profiled: list[tuple[int, int]]
    lean_from: int
    step_s: float | None  # the median of the steps known one by one

    @classmethod
    def of(cls, run: RunStream, offset_s: float) -> RankSteps:
        """`run`'s steps, its clock moved by `offset_s` onto the run's (goodput.breakdown's Clock)."""
        known = {i: end for i, end in run.ends.items() if i >= run.first_step}
        known |= {i: end for i, (end, _, _) in run.slow.items()}
        known |= {b.first + b.count - 1: b.end_s for b in run.blocks}
        index = sorted(known)
        lean = run.mark("lean_start")
        leaves = _COLLECTIVE_LEAVES + (_BACKWARD_LEAVES if lean and lean.get("sync_in_backward") else ())
        waiting = sorted(step for step, stack in run.samples
                         if stack in run.stacks and run.stacks[stack].leaf.startswith(leaves))
        ends = [known[i] + offset_s for i in index]
        durations = [b - a for i, j, a, b in zip(index, index[1:], ends, ends[1:]) if j == i + 1]
        return cls(index=index, end_s=ends, sampled=sorted(step for step, _ in run.samples), waiting=waiting,
                   profiled=run.profiled, lean_from=int(lean["step"]) if lean else run.first_step + 1,
                   step_s=statistics.median(durations) if durations else None)

    def end_at(self, step: int) -> tuple[int, float] | None:
        """The last step at or before `step` whose end is known, and its end."""
        k = bisect_right(self.index, step) - 1
        return (self.index[k], self.end_s[k]) if k >= 0 else None

    def own_s(self, first: int, last: int) -> float | None:
        """The rank's own time a step over steps first+1..last: their time less the share of their
        samples waiting in a collective (None: an end not known)."""
        a, b = self.end_at(first), self.end_at(last)
        if a is None or b is None or b[0] <= a[0]:
            return None
        samples = bisect_right(self.sampled, last) - bisect_right(self.sampled, first)
        waits = bisect_right(self.waiting, last) - bisect_right(self.waiting, first)
        share = waits / samples if samples >= _MIN_SAMPLES else 0.0
        return (b[1] - a[1]) / (b[0] - a[0]) * (1.0 - share)

    def slow_span(self, first: int, last: int, reach: int) -> tuple[int, int]:
        """Steps first+1..last narrowed or widened to the longest run of steps within `reach` steps
        of them that took RATIO times the rank's median step or more (unchanged where none did, or
        where the steps' times are not known one by one): a straggler's steps, not its stretches'."""
        if not self.step_s:
            return first, last
        lo, hi = bisect_right(self.index, first - reach), bisect_right(self.index, last + reach)
        slow = [self.index[k] for k in range(max(lo, 1), hi) if self.index[k] - self.index[k - 1] == 1
                and self.end_s[k] - self.end_s[k - 1] >= RATIO * self.step_s]
        if not slow:
            return first, last
        runs = [[slow[0]]]  # the slow steps in runs, a gap of _GAP steps at most within one
        for step in slow[1:]:
            if step - runs[-1][-1] <= _GAP:
                runs[-1].append(step)
            else:
                runs.append([step])
        longest = max(runs, key=len)
        return longest[0] - 1, longest[-1]

    def profiles(self, first: int, last: int) -> bool:
        return any(lo <= last and hi > first for lo, hi in self.profiled)


def _stretches(ranks: dict[int, RankSteps], step_s: float) -> list[tuple[int, int]]:
    """(first, last): the stretches of steps first+1..last that every rank ran in its lean
    observation, none touched by a profiler window."""
    start = max(r.lean_from for r in ranks.values())
    end = min(r.index[-1] for r in ranks.values())
    size = max(1, ceil(STRETCH_S / step_s), ceil((end - start) / MAX_STRETCHES))
    bounds = [*range(start, end, size), end]
    return [(a, b) for a, b in zip(bounds, bounds[1:])
            if b > a and not any(r.profiles(a, b) for r in ranks.values())]


def _straggling(ranks: dict[int, RankSteps], first: int, last: int) -> dict[int, tuple[float, float]]:
    """The ranks that straggle over steps first+1..last: rank -> (own time a step, others' median)."""
    own = {rank: r.own_s(first, last) for rank, r in ranks.items()}
    known = {rank: s for rank, s in own.items() if s is not None}
    out = {}
    for rank, mine in known.items():
        others = [s for r, s in known.items() if r != rank]
        median = statistics.median(others) if others else None
        if median is not None and mine > 0 and mine >= RATIO * median:  # the others all waiting: 0
            out[rank] = (mine, median)
    return out


def stragglers(ranks: dict[int, RankSteps], step_s: float | None, wall_s: float) -> list[Straggler]:
    """The stragglers of a job of two ranks or more, the costliest first (see the module's doc)."""
    if len(ranks) < 2 or not step_s or any(not r.index for r in ranks.values()):
        return []
    stretches = _stretches(ranks, step_s)
    reach = stretches[0][1] - stretches[0][0] if stretches else 0
    found = [_measured(ranks, rank, *ranks[rank].slow_span(first, last, reach))
             for rank, first, last in _spans(ranks, stretches)]
    kept = [s for s in found if s is not None and s.lost_s >= MIN_SHARE * wall_s]
    return sorted(kept, key=lambda s: -s.lost_s)[:KEEP]


def _spans(ranks: dict[int, RankSteps], stretches: list[tuple[int, int]]) -> list[tuple[int, int, int]]:
    """(rank, first, last): the adjacent stretches in which one rank straggled, joined."""
    found, open_ = [], {}
    for first, last in stretches:
        slow = _straggling(ranks, first, last)
        for rank in [r for r in open_ if r not in slow or open_[r][1] != first]:
            found.append((rank, *open_.pop(rank)))
        for rank in slow:
            open_[rank] = (open_[rank][0] if rank in open_ else first, last)
    return found + [(rank, *span) for rank, span in open_.items()]


def _measured(ranks: dict[int, RankSteps], rank: int, first: int, last: int) -> Straggler | None:
    """Rank `rank` over steps first+1..last against the others (None: their times not known)."""
    own = {r: steps.own_s(first, last) for r, steps in ranks.items()}
    mine, others = own[rank], [s for r, s in own.items() if r != rank and s is not None]
    start, end = ranks[rank].end_at(first), ranks[rank].end_at(last)
    if mine is None or not others or start is None or end is None:
        return None
    median = statistics.median(others)
    return Straggler(rank=rank, first_step=first + 1, last_step=last, start_s=start[1], end_s=end[1], step_s=mine,
                     others_step_s=median, lost_s=max(0.0, (mine - median) * (last - first)))
