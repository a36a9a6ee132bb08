"""The run as it goes, read from its stream while the script runs (`torchdoctor watch`'s live
view, in torchdoctor's own process: nothing is added to the observed step).

`LiveState.read` takes the lines written since the last read through the stream's one reader
(goodput.stream's `StreamFollower`, the same `RunStream` the breakdown reads at the end) and
derives what the view shows from what is new in it: the steps and their rate, a running median of
the recent steps, the goodput so far (the steps within twice that median), the memory, the epoch
and its length (the DataLoader's), the batch size (the detailed windows'), and the last badput
event: a slow step named by the stack samples in it, or a periodic profiler window. The figures
are estimates made as the run goes; the report at the end is the breakdown.
"""

from __future__ import annotations

import statistics
from collections import Counter, deque
from dataclasses import dataclass
from itertools import islice
from pathlib import Path

from torchdoctor.goodput.causes import cause_of
from torchdoctor.goodput.stream import RunStream, StreamFollower
from torchdoctor.goodput.trends import memory_bytes

_RECENT = 512  # steps of the running median
_SLOW = 2.0  # a step this many times the running median is badput
_SAMPLES = 4096  # the latest stack samples searched for a slow step's cause


@dataclass(frozen=True, slots=True)
class LiveView:
    """What the live view shows at one moment (None: not known yet)."""

    elapsed_s: float
    steps: int
    steps_per_s: float | None
    samples_per_s: float | None
    step_s: float | None
    memory_bytes: float | None
    goodput_fraction: float | None
    epoch: int
    epoch_step: int
    epoch_length: int | None
    epoch_eta_s: float | None
    last_badput: str | None


class LiveState:
    """What the stream at `path` said so far; `read` takes the new lines, `view` says it."""

    def __init__(self, path: Path) -> None:
        self.follower = StreamFollower(path)
        self.steps = 0
        self.last_end_s: float | None = None
        self.steady_s = 0.0
        self._taken = [0, 0, 0]  # one-by-one steps, blocks and profiler windows taken from the run
        self._recent: deque[float] = deque(maxlen=_RECENT)
        self._median: float | None = None
        self._badput: tuple[int, float | None] | None = None  # (step, its time; None: a profiler window)
        self._rate: tuple[int, float] | None = None  # (steps, at) of the previous view

    @property
    def run(self) -> RunStream:
        """Everything read so far: the breakdown's input once the script ended."""
        return self.follower.run

    def read(self, *, final: bool = False) -> None:
        """Take the complete lines written since the last read (`final`: to the file's end)."""
        self.follower.read(final=final)
        run = self.run
        steps, blocks, profiles = self._taken
        for index, end_s in islice(run.ends.items(), steps, None):
            self._step(index, end_s)
        for block in run.blocks[blocks:]:
            self._block(block.first, block.count, block.end_s, block.sum_s, block.median_s)
        for first, _ in run.profiled[profiles:]:
            self._note_badput(first, None)
        self._taken = [len(run.ends), len(run.blocks), len(run.profiled)]

    def _note_badput(self, index: int, seconds: float | None) -> None:
        if self._badput is None or index >= self._badput[0]:
            self._badput = (index, seconds)

    def _step(self, index: int, end_s: float) -> None:
        self.steps = max(self.steps, index + 1)
        previous, self.last_end_s = self.last_end_s, end_s
        if previous is None:
            return
        duration = end_s - previous
        self._recent.append(duration)
        if self._median is None or len(self._recent) % 64 == 0:
            self._median = statistics.median(self._recent)
        if duration <= _SLOW * self._median:
            self.steady_s += duration
        else:
            self._note_badput(index, duration)

    def _block(self, first: int, count: int, end_s: float, sum_s: float, median_s: float) -> None:
        slow = sorted((i, s[1]) for i, s in self.run.slow.items() if first <= i < first + count)
        self.steps = max(self.steps, first + count)
        self.last_end_s = end_s
        self.steady_s += sum_s - sum(duration for _, duration in slow)
        self._recent.append(median_s)
        if slow:
            self._note_badput(*slow[-1])

    def _epoch(self) -> tuple[int, int, int | None]:
        """(epochs begun, the step the last began at, its length: None where not known)."""
        epochs = [m for m in self.run.marks if m.get("name") == "epoch"]
        return (len(epochs), int(epochs[-1]["step"]), epochs[-1].get("length")) if epochs else (0, 0, None)

    def _last_badput(self) -> str | None:
        if self._badput is None:
            return None
        index, duration = self._badput
        if duration is None:
            return f"step {index}: torchdoctor's periodic profiler window"
        run = self.run
        stacks = Counter(stack for step, stack in islice(reversed(run.samples), _SAMPLES)
                         if step == index and stack in run.stacks)
        lean = run.mark("lean_start")
        loop = (str(lean["loop"][0]), str(lean["loop"][1])) if lean and lean.get("loop") else None
        cause = cause_of(run.stacks[stacks.most_common(1)[0][0]], loop).label if stacks else "a slow step"
        return f"step {index}: {cause}, {duration * 1e3:.0f} ms"

    def view(self, elapsed_s: float) -> LiveView:
        """What the view shows now, `elapsed_s` after the process started; the rate is over the
        time since the previous view."""
        rate = None
        if self._rate is not None and elapsed_s > self._rate[1]:
            rate = (self.steps - self._rate[0]) / (elapsed_s - self._rate[1])
        self._rate = (self.steps, elapsed_s)
        step_s = statistics.median(self._recent) if self._recent else None
        epoch, epoch_start, epoch_length = self._epoch()
        epoch_step = self.steps - epoch_start
        left = epoch_length - epoch_step if epoch_length is not None and epoch else None
        lean = self.run.mark("lean_start")
        batch_size = lean.get("batch_size") if lean else None
        return LiveView(
            elapsed_s=elapsed_s, steps=self.steps, steps_per_s=rate,
            samples_per_s=rate * batch_size if rate is not None and batch_size else None,
            step_s=step_s, memory_bytes=memory_bytes(self.run.memory[-1]) if self.run.memory else None,
            goodput_fraction=self.steady_s / elapsed_s if elapsed_s > 0 and self.steps else None,
            epoch=epoch, epoch_step=epoch_step, epoch_length=epoch_length,
            epoch_eta_s=left * step_s if left is not None and left > 0 and step_s else None,
            last_badput=self._last_badput())
