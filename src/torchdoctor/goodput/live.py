"""The run as it goes, read from its stream while the script runs (`torchdoctor watch`'s live
view, in torchdoctor's own process: nothing is added to the observed step).

`LiveState.read` takes the lines written since the last read (a torn last line waits for the next
read) and keeps what the view shows, bounded for a run of days: the steps and their rate, a
running median of the recent steps, the goodput so far (the steps within twice that median), the
memory, the epoch and its length (the DataLoader's), the batch size (the detailed windows'), and
the last badput event: a slow step named by the stack samples in it, or a periodic profiler
window. The figures are estimates made as the run goes; the report at the end is the breakdown.
"""

from __future__ import annotations

import statistics
from collections import Counter, deque
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from torchdoctor.goodput.causes import cause_of
from torchdoctor.goodput.stream import Stack, stack_of
from torchdoctor.goodput.trends import memory_bytes

_RECENT = 512  # steps of the running median
_SLOW = 2.0  # a step this many times the running median is badput


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
        self.path = path
        self._offset = 0
        self.steps = 0
        self.last_end_s: float | None = None
        self.steady_s = 0.0
        self.memory: float | None = None
        self.batch_size: int | None = None
        self.loop: tuple[str, str] | None = None
        self.epoch, self.epoch_start, self.epoch_length = 0, 0, None
        self._recent: deque[float] = deque(maxlen=_RECENT)
        self._median: float | None = None
        self._stacks: dict[int, Stack] = {}
        self._samples: deque[tuple[int, int]] = deque(maxlen=4096)
        self._badput: tuple[str, Any] | None = None  # ("step", (index, seconds)) or ("profile", index)
        self._rate: tuple[int, float] | None = None  # (steps, at) of the previous view

    def read(self) -> None:
        """Take the complete lines written since the last read."""
        try:
            with self.path.open("rb") as f:
                f.seek(self._offset)
                chunk = f.read()
        except OSError:
            return
        complete = chunk[: chunk.rfind(b"\n") + 1]
        self._offset += len(complete)
        for line in complete.splitlines():
            try:
                item = orjson.loads(line)
                if isinstance(item, dict):
                    self._apply(item)
            except (orjson.JSONDecodeError, KeyError, TypeError, ValueError, IndexError):
                continue

    def _apply(self, item: dict[str, Any]) -> None:
        if "steps" in item:
            for index, end_us in enumerate(item["steps"]["end_us"], start=int(item["steps"]["first"])):
                self._step(index, end_us / 1e6)
        elif "block" in item:
            self._block(item["block"], item.get("slow", []))
        elif "samples" in item:
            self._samples.extend((int(step), int(stack)) for step, stack in item["samples"])
        elif "stack" in item:
            stack_id, stack = stack_of(item["stack"])
            self._stacks[stack_id] = stack
        elif "mem" in item:
            self.memory = memory_bytes(tuple(item["mem"]))  # type: ignore[arg-type]
        elif "profile" in item:
            self._badput = ("profile", int(item["profile"]["first"]))
        elif "mark" in item:
            self._mark(item["mark"])

    def _mark(self, mark: dict[str, Any]) -> None:
        if mark.get("name") == "epoch":
            self.epoch += 1
            self.epoch_start, self.epoch_length = int(mark["step"]), mark.get("length")
        elif mark.get("name") == "lean_start":
            self.batch_size = mark.get("batch_size")
            self.loop = tuple(mark["loop"]) if mark.get("loop") else None  # type: ignore[assignment]

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
            self._badput = ("step", (index, duration))

    def _block(self, block: dict[str, Any], slow: list[list[Any]]) -> None:
        self.steps = max(self.steps, int(block["first"]) + int(block["count"]))
        self.last_end_s = block["end_us"] / 1e6
        self.steady_s += (block["sum_us"] - sum(s[2] for s in slow)) / 1e6
        self._recent.append(block["median_us"] / 1e6)
        if slow:
            index, _, duration_us, _ = slow[-1]
            self._badput = ("step", (int(index), duration_us / 1e6))

    def _last_badput(self) -> str | None:
        if self._badput is None:
            return None
        kind, value = self._badput
        if kind == "profile":
            return f"step {value}: torchdoctor's periodic profiler window"
        index, duration = value
        stacks = Counter(stack for step, stack in self._samples if step == index and stack in self._stacks)
        cause = cause_of(self._stacks[stacks.most_common(1)[0][0]], self.loop).label if stacks else "a slow step"
        return f"step {index}: {cause}, {duration * 1e3:.0f} ms"

    def view(self, elapsed_s: float) -> LiveView:
        """What the view shows now, `elapsed_s` after the process started; the rate is over the
        time since the previous view."""
        rate = None
        if self._rate is not None and elapsed_s > self._rate[1]:
            rate = (self.steps - self._rate[0]) / (elapsed_s - self._rate[1])
        self._rate = (self.steps, elapsed_s)
        step_s = statistics.median(self._recent) if self._recent else None
        epoch_step = self.steps - self.epoch_start
        left = self.epoch_length - epoch_step if self.epoch_length is not None and self.epoch else None
        return LiveView(
            elapsed_s=elapsed_s, steps=self.steps, steps_per_s=rate,
            samples_per_s=rate * self.batch_size if rate is not None and self.batch_size else None,
            step_s=step_s, memory_bytes=self.memory,
            goodput_fraction=self.steady_s / elapsed_s if elapsed_s > 0 and self.steps else None,
            epoch=self.epoch, epoch_step=epoch_step, epoch_length=self.epoch_length,
            epoch_eta_s=left * step_s if left is not None and left > 0 and step_s else None,
            last_badput=self._last_badput())
