"""The wall time of a whole run, from the process's start to its exit, broken down into goodput
(steady steps) and badput, each part named in the script's own words.

The parts add up to the wall time:
  startup     process start -> the script's first line (interpreter, import torch, set-up)
  top_level   the script's first line -> the end of its first step (building data and model)
  steps       the first step's end -> the last step's end, each step either
                steady (within the band: the median step and a margin), its whole time goodput, or
                slow (beyond the band), its excess over the median badput grouped by cause:
                  warmup: the slow steps right after the first (compilation, allocator warm-up)
                  a function of the script's (most stack samples in those steps, beyond the usual)
                  epoch starts (a step that began an `iter(DataLoader)`)
                  data stalls (the step's wait in `DataLoader.__next__` is most of its excess)
                  torchdoctor's detailed windows (the profiler and memory steps at the start)
              and the steps of the periodic profiler windows (`watch --profile-every`): their time
              up to the median steady, the rest torchdoctor's; none of them sets the band (a
              slow one in which a function of the script's ran beyond its usual work, a
              checkpoint that fell in a window, is that function's slow step)
              and in a slow epoch (median step beyond the run's by a fifth), the excess of its
              steady steps over the run's median is badput of that epoch
  tail        the last step's end -> the script's end
  exit        the script's end -> the process's exit
"""

from __future__ import annotations

import statistics
from bisect import bisect_right
from collections import Counter, defaultdict
from functools import reduce
from math import gcd
from dataclasses import dataclass, field, replace
from typing import Callable

from torchdoctor.goodput.causes import Cause, cause_of
from torchdoctor.goodput.section import Part, WholeRun
from torchdoctor.goodput.stream import RunStream
from torchdoctor.goodput.trends import find_trends, memory_bytes

SLOW_EPOCH = 1.2  # an epoch whose median step is this many times the run's is slow
_BASELINE_SHARE = 0.05  # a cause seen in this share of the steady steps' samples is the loop's own work


@dataclass(frozen=True, slots=True)
class Clock:
    """Maps the process's own times onto the run's (0 = the process started)."""

    offset_s: float
    wall_s: float


@dataclass(slots=True)
class _Steps:
    """The steps from the first's end, as indices, end times, durations and data waits."""

    index: list[int] = field(default_factory=list)
    end: list[float] = field(default_factory=list)
    duration: list[float] = field(default_factory=list)
    data: list[float] = field(default_factory=list)
    block_steady_s: float = 0.0  # the steps written as blocks, less their slow ones
    block_steps: int = 0


def run_clock(run: RunStream, spawn_unix_s: float | None, exit_unix_s: float | None) -> Clock:
    """The clock of `run` against the process's spawn and exit as the parent saw them."""
    end = run.mark("script_end")
    last = max([run.memory[-1][1] if run.memory else 0.0, *(run.ends.values() or [0.0]),
                end["t_s"] if end else 0.0])
    if spawn_unix_s is None or run.start_unix_s is None:
        return Clock(0.0, last)
    offset = run.start_unix_s - spawn_unix_s - run.start_t_s
    wall = exit_unix_s - spawn_unix_s if exit_unix_s is not None else last + offset
    return Clock(offset, max(wall, last + offset))


def _steps(run: RunStream, clock: Clock) -> tuple[float | None, _Steps]:
    """The first step's end and the steps after it."""
    raw = sorted(i for i in run.ends if i >= run.first_step)
    out = _Steps()
    if not raw:
        return None, out
    previous = run.ends[raw[0]]
    for i in raw[1:]:
        out.index.append(i)
        out.end.append(run.ends[i] + clock.offset_s)
        out.duration.append(max(0.0, run.ends[i] - previous))
        out.data.append(run.data.get(i, 0.0))
        previous = run.ends[i]
    for block in run.blocks:
        slow = [(i, s) for i, s in run.slow.items() if block.first <= i < block.first + block.count]
        out.block_steady_s += block.sum_s - sum(s[1] for _, s in slow)
        out.block_steps += block.count - len(slow)
        for i, (end, duration, data) in sorted(slow):
            out.index.append(i)
            out.end.append(end + clock.offset_s)
            out.duration.append(duration)
            out.data.append(data)
    return run.ends[raw[0]] + clock.offset_s, out


def _band(durations: list[float]) -> tuple[float, float]:
    """The steady band of a set of step times: (median, the slowest steady step)."""
    median = statistics.median(durations)
    spread = 1.4826 * statistics.median(abs(d - median) for d in durations)
    return median, median + max(0.5 * median, 6 * spread)


class _Sampled:
    """The causes of each step's stack samples, and those of the loop's usual work."""

    def __init__(self, run: RunStream, loop: tuple[str, str] | None) -> None:
        self.loop = loop
        self.by_step: dict[int, list[Cause]] = defaultdict(list)
        for step, stack_id in run.samples:
            stack = run.stacks.get(stack_id)
            if stack is not None and stack.frames:
                self.by_step[step].append(cause_of(stack, loop))
        self.usual: set[tuple[str, str, int]] = set()

    def learn_usual(self, steady: list[int]) -> None:
        counts = Counter(c.place for i in steady for c in self.by_step.get(i, []))
        total = sum(counts.values())
        self.usual = {place for place, n in counts.items() if total and n / total >= _BASELINE_SHARE}

    def unusual(self, steps: list[int], within: tuple[str, str] | None = None) -> Cause | None:
        """The most sampled place in `steps` that is not the loop's usual work (in the function
        `within` = (function, file) only, when given)."""
        counts = Counter(c.place for i in steps for c in self.by_step.get(i, [])
                         if c.place not in self.usual and (within is None or c.place[:2] == within))
        if not counts:
            return None
        function, file, line = counts.most_common(1)[0][0]
        return Cause(function, file, line)

    def unusual_shares(self, step: int) -> dict[tuple[str, str], float]:
        """The share of each function (function, file) among the step's samples that are not the
        loop's usual work."""
        counts = Counter(c.place[:2] for c in self.by_step.get(step, []) if c.place not in self.usual)
        total = sum(counts.values())
        return {key: n / total for key, n in counts.items()}

    def in_loop(self, function: str, file: str) -> bool:
        """Whether it is the loop's own function (a line of the loop, no function of the script's under it)."""
        return self.loop is not None and (file, function) == self.loop

    def top(self, steps: range | list[int]) -> Cause | None:
        counts = Counter(c for i in steps for c in self.by_step.get(i, []))
        return counts.most_common(1)[0][0] if counts else None


def _period(indices: list[int]) -> int | None:
    """The step period of a group of slow steps, when most of its gaps are equal."""
    gaps = Counter(b - a for a, b in zip(indices, indices[1:]))
    if len(indices) < 3 or not gaps:
        return None
    gap, n = gaps.most_common(1)[0]
    return gap if n >= 0.6 * (len(indices) - 1) else None


def breakdown(run: RunStream, spawn_unix_s: float | None = None, exit_unix_s: float | None = None,
              *, disk_bytes: int = 0) -> WholeRun:
    """The whole run's breakdown and trends, from what the process streamed."""
    clock = run_clock(run, spawn_unix_s, exit_unix_s)
    lean = run.mark("lean_start")
    loop = tuple(lean["loop"]) if lean and lean.get("loop") else None
    sampled = _Sampled(run, loop)  # type: ignore[arg-type]
    script_start = _at(run, "script_start", clock, default=0.0)
    end = run.mark("script_end")
    first_end, steps = _steps(run, clock)
    last_end = steps.end[-1] if steps.end else first_end
    script_end = end["t_s"] + clock.offset_s if end else max(last_end or 0.0, _last_sign(run) + clock.offset_s)
    parts = [Part("startup", "interpreter start, import torch, set-up", script_start)]
    if first_end is None:
        cause = sampled.top(list(sampled.by_step))
        parts.append(Part("no_steps", "the script (no training step was detected)", script_end - script_start,
                          cause=cause.label if cause else None))
        median = None
    else:
        cause = sampled.top(range(run.first_step + 1))
        parts.append(Part("top_level", "the script's top level and its first step", first_end - script_start,
                          steps=1, cause=cause.label if cause else None))
        median, step_parts = _step_parts(run, steps, sampled, lean)
        parts += step_parts
        tail = sampled.top([i for i in sampled.by_step if i > (steps.index[-1] if steps.index else run.first_step)])
        parts.append(Part("tail", "after the last step", max(0.0, script_end - (last_end or 0.0)),
                          cause=tail.label if tail else None))
    parts.append(Part("exit", "the end: torchdoctor's results, interpreter exit", max(0.0, clock.wall_s - script_end)))
    goodput = sum(p.seconds for p in parts if p.kind == "steady")
    count = len(steps.index) + steps.block_steps + (1 if first_end is not None else 0)
    return WholeRun(wall_s=clock.wall_s, ended=str(end.get("how", "")) if end else "killed", steps=count,
                    step_s=median, goodput_s=goodput, parts=parts,
                    trends=find_trends(run, *_outside_windows(run, steps), parts, median, clock.wall_s),
                    timeline=_timeline(run, steps, clock), disk_bytes=disk_bytes,
                    profiles=[replace(w, t_s=w.t_s + clock.offset_s) for w in run.profiles],
                    profiles_seen=len(run.profiled))


def _outside_windows(run: RunStream, steps: _Steps) -> tuple[list[int], list[float]]:
    """The steps' indices and durations, less the periodic profiler windows' steps."""
    inside = _in_windows(run.profiled)
    kept = [(i, d) for i, d in zip(steps.index, steps.duration) if not inside(i)]
    return [i for i, _ in kept], [d for _, d in kept]


def _at(run: RunStream, name: str, clock: Clock, *, default: float) -> float:
    mark = run.mark(name)
    return mark["t_s"] + clock.offset_s if mark else default


def _last_sign(run: RunStream) -> float:
    """The last time the process was seen alive (a run killed before its end mark)."""
    return max([run.memory[-1][1] if run.memory else 0.0, *(run.ends.values() or [0.0])])


@dataclass(slots=True)
class _Slow:
    index: int
    end: float
    excess: float
    data: float


def _epochs(run: RunStream) -> list[int]:
    """The first step of each epoch after the first step (each `iter(DataLoader)` of the script)."""
    return sorted({int(m["step"]) for m in run.marks if m.get("name") == "epoch" and m["step"] > run.first_step})


def _epoch_bands(steps: _Steps, starts: list[int], median: float) -> dict[int, tuple[float, float]]:
    """The band of each slow epoch (its median step beyond the run's by `SLOW_EPOCH`), by epoch."""
    by_epoch: dict[int, list[float]] = defaultdict(list)
    for i, d in zip(steps.index, steps.duration):
        by_epoch[bisect_right(starts, i)].append(d)
    return {e: _band(ds) for e, ds in by_epoch.items()
            if len(ds) >= 5 and len(by_epoch) > 1 and statistics.median(ds) > SLOW_EPOCH * median}


def _steady_band(steps: _Steps, lean_from: int | None, keep: Callable[[int], bool]) -> tuple[float, float]:
    """The band of the steps `keep` keeps: the lean ones when there are 20 or more, else all."""
    kept = [(i, d) for i, d in zip(steps.index, steps.duration) if keep(i)] or list(zip(steps.index, steps.duration))
    lean = [d for i, d in kept if lean_from is not None and i >= lean_from]
    return _band(lean if len(lean) >= 20 else [d for _, d in kept])


def _in_windows(ranges: list[tuple[int, int]]) -> Callable[[int], bool]:
    """Whether a step is one of the periodic profiler windows' (`ranges`: first, last step each)."""
    ordered = sorted(ranges)
    firsts = [first for first, _ in ordered]

    def inside(index: int) -> bool:
        k = bisect_right(firsts, index) - 1
        return k >= 0 and index <= ordered[k][1]
    return inside


class _Profiled:
    """The steps of the periodic profiler windows: each step's time up to the median is the step's
    work (steady), the rest the profiler's cost (badput); none is in the steady steps' statistics."""

    def __init__(self, ranges: list[tuple[int, int]]) -> None:
        self.inside = _in_windows(ranges)
        self.steady_s = self.excess_s = 0.0
        self.steps = 0
        self.first: list[int] = []

    def take(self, index: int, duration: float, median: float) -> None:
        """Count a window's step."""
        self.steady_s += min(duration, median)
        self.excess_s += max(0.0, duration - median)
        self.steps += 1
        self.first.append(index)


def _step_parts(run: RunStream, steps: _Steps, sampled: _Sampled,
                lean: dict | None) -> tuple[float | None, list[Part]]:
    """The steps' time: steady (goodput), and each kind of slow step's excess (badput)."""
    if not steps.duration:
        return None, [Part("steady", "steady steps", steps.block_steady_s, steps=steps.block_steps)]
    lean_from = int(lean["step"]) if lean else None
    starts = _epochs(run)
    profiled = _in_windows(run.profiled)
    median, limit = _steady_band(steps, lean_from, lambda i: not profiled(i))
    bands = _epoch_bands(steps, starts, median)
    if bands:  # the run's median leaves the slow epochs out
        median, limit = _steady_band(steps, lean_from,
                                     lambda i: not profiled(i) and bisect_right(starts, i) not in bands)
    steady_s, steady_n, steady_idx = steps.block_steady_s, steps.block_steps, []
    epoch_excess: dict[int, float] = defaultdict(float)
    epoch_steps: Counter[int] = Counter()
    slow: list[_Slow] = []
    windows = _Profiled(run.profiled)
    in_window: list[tuple[int, float, float, float]] = []
    for i, end, d, data in zip(steps.index, steps.end, steps.duration, steps.data):
        if windows.inside(i):
            in_window.append((i, end, d, data))
            continue
        epoch = bisect_right(starts, i)
        base, top = bands.get(epoch, (median, limit))
        if epoch in bands:
            epoch_excess[epoch] += (base if d > top else d) - median
            epoch_steps[epoch] += 1
        if d > top:
            slow.append(_Slow(i, end, d - base, data))
            steady_s += median
        else:
            steady_s += median if epoch in bands else d
            steady_idx.append(i)
        steady_n += 1
    sampled.learn_usual(steady_idx)
    for i, end, d, data in in_window:
        if d > limit and _script_ran(sampled, i):  # a checkpoint that fell in a window is the checkpoint's
            slow.append(_Slow(i, end, d - median, data))
            steady_s += median
            steady_n += 1
        else:
            windows.take(i, d, median)
    slow.sort(key=lambda s: s.index)
    parts = [Part("steady", "steady steps", steady_s + windows.steady_s, steps=steady_n + windows.steps)]
    if windows.steps:
        parts.append(Part("windows", "torchdoctor's periodic profiler windows", windows.excess_s,
                          steps=windows.steps, first_steps=windows.first[:5]))
    in_slow_epoch = lambda i: bisect_right(starts, i) in bands  # noqa: E731
    slow_parts, absorbed = _slow_parts(slow, run.first_step, set(starts), sampled, lean_from, in_slow_epoch)
    for step in absorbed:
        epoch_excess[bisect_right(starts, step.index)] += step.excess
    parts += slow_parts
    parts += [Part("slow_epoch", f"epoch {e + 1}: its median step {bands[e][0] * 1e3:.2f} ms, the run's "
                   f"{median * 1e3:.2f} ms", x, steps=epoch_steps[e]) for e, x in sorted(epoch_excess.items())]
    return median, parts


def _script_ran(sampled: _Sampled, step: int) -> bool:
    """Whether a function of the script's other than the loop's usual work was sampled in `step`."""
    return any(not sampled.in_loop(function, file) for function, file in sampled.unusual_shares(step))


def _slow_parts(slow: list[_Slow], first_step: int, epoch_starts: set[int], sampled: _Sampled,
                lean_from: int | None, in_slow_epoch: Callable[[int], bool]) -> tuple[list[Part], list[_Slow]]:
    """The slow steps grouped by cause: warm-up, the script's functions (a step whose samples show
    two shares its excess between them by their samples), epoch starts, data stalls, the detailed
    windows. A line of the loop itself names a group only when its steps recur with a period
    (`torch.save` written in the loop); a step no sample fell in joins the periodic group it falls
    on, else its slow epoch's excess (returned apart), else the other slow steps."""
    warmup = 0
    while warmup < len(slow) and slow[warmup].index == first_step + 1 + warmup:
        warmup += 1
    groups: dict[tuple, list[_Slow]] = defaultdict(list)
    pending = []
    for step in slow[warmup:]:
        shares = sampled.unusual_shares(step.index)
        for (function, file), share in shares.items():
            groups[("slow", function, file, sampled.in_loop(function, file))].append(
                replace(step, excess=step.excess * share))
        if shares:
            continue
        if step.index in epoch_starts:
            groups[("epoch",)].append(step)
        elif step.data >= 0.5 * step.excess:
            groups[("data",)].append(step)
        elif lean_from is not None and step.index < lean_from:
            groups[("windows",)].append(step)
        else:
            pending.append(step)
    for key in [k for k in groups if k[0] == "slow" and k[3] and not _period([m.index for m in groups[k]])]:
        pending += groups.pop(key)
    for key in [k for k in groups if k[0] == "slow"]:
        pending = _join_periodic(groups[key], pending)
    absorbed = [p for p in pending if in_slow_epoch(p.index)]
    if len(absorbed) < len(pending):
        groups[("other",)] += [p for p in pending if not in_slow_epoch(p.index)]
    parts = [_group_part(("warmup",), slow[:warmup], sampled)] if warmup else []
    return parts + sorted((_group_part(key, members, sampled) for key, members in groups.items()),
                          key=lambda p: -p.seconds), absorbed


def _join_periodic(members: list[_Slow], pending: list[_Slow]) -> list[_Slow]:
    """Move into `members` the pending slow steps of a like excess (a third to three times the
    group's median) that fall on the group's period; returns the steps left pending. The period:
    the greatest common divisor of the gaps between the sampled steps (saves every 100 steps
    sampled at 100, 300 and 400: 100), or a fraction of it when the steps between fill that finer
    grid (sampled at 100, 300, 500 only, with like steps at 200 and 400: 100)."""
    indices = sorted(m.index for m in members)
    whole = reduce(gcd, (b - a for a, b in zip(indices, indices[1:])), 0)
    typical = statistics.median(m.excess for m in members)
    alike = [p for p in pending if typical / 3 <= p.excess <= 3 * typical]
    for period in (whole // k for k in (5, 4, 3, 2, 1) if whole % k == 0 and whole // k >= 2):
        joined = [p for p in alike if (p.index - indices[0]) % period == 0]
        on_grid = {i for i in [*indices, *(p.index for p in joined)] if indices[0] <= i <= indices[-1]}
        if len(on_grid) >= 0.8 * ((indices[-1] - indices[0]) // period + 1):
            members += joined
            return [p for p in pending if p not in joined]
    return pending


_GROUP_LABELS = {
    "warmup": "warm-up: the first steps (compilation, caches)",
    "epoch": "epoch starts (the DataLoader starting again)",
    "data": "data stalls (waiting in DataLoader.__next__)",
    "windows": "torchdoctor's detailed windows (profiler, memory)",
    "other": "other slow steps (no cause of their own sampled)",
}


def _group_part(key: tuple, members: list[_Slow], sampled: _Sampled) -> Part:
    members = sorted(members, key=lambda m: m.index)
    indices = [m.index for m in members]
    every = (members[-1].end - members[0].end) / (len(members) - 1) if len(members) > 1 else None
    kind = "windows" if key[0] == "windows" else "warmup" if key[0] == "warmup" else "slow"
    named = sampled.unusual(indices, within=key[1:3]) if key[0] == "slow" else None
    cause = named.label if named else None
    return Part(kind, cause or _GROUP_LABELS[key[0]], sum(m.excess for m in members), steps=len(members),
                period_steps=_period(indices), every_s=every, cause=cause, first_steps=indices[:5])


def _timeline(run: RunStream, steps: _Steps, clock: Clock, points: int = 400) -> dict[str, list[float | None]]:
    """At most `points` points of step time (the slowest of each stretch, with its step index) and
    of memory over the run."""
    stride = max(1, len(steps.end) // points)
    t, step_s, index = [], [], []
    for k in range(0, len(steps.end), stride):
        j = max(range(k, min(k + stride, len(steps.end))), key=lambda n: steps.duration[n])
        t.append(round(steps.end[j], 4))
        step_s.append(steps.duration[j])
        index.append(steps.index[j])
    mem_stride = max(1, len(run.memory) // points)
    memory = run.memory[::mem_stride]
    return {"t_s": t, "step_s": step_s, "step": index, "memory_t_s": [round(m[1] + clock.offset_s, 3) for m in memory],
            "memory_bytes": [memory_bytes(m) for m in memory]}
