"""The whole run's stream (`rank<RANK>.watch.jsonl`, written by observe.watch), read back.

Lines (one JSON object each; times in µs since the observation's clock started in the process):
  {"start": {"unix_ns", "t_us", "pid", "sample_interval_s"}}   the clock's anchor to wall time
  {"mark": {"name", "t_us", "step", ...}}   script_start, epoch (with the DataLoader's "length"),
                        lean_start (with the step "source", the "loop" [file, function], the
                        windows' "batch_size" and "sync_in_backward": the model is DDP's, whose
                        gradients are reduced inside `backward`), script_end (with "how")
  {"restart": N}        step detection chose a better source: steps before index N were not steps
  {"steps": {"first", "end_us": [...], "data_us": [...]}}    steps one by one
  {"block": {"first", "count", "end_us", "sum_us", "median_us", "max_us", "data_us"},
   "slow": [[index, end_us, duration_us, data_us], ...]}      later steps, one block a second
  {"stack": [id, leaf, [[file, function, line], ...]]}        a stack first seen (innermost first)
  {"samples": [[step, stack id], ...]}    the step in progress at each sample, and its stack
  {"mem": [steps, t_us, rss_bytes, cuda_allocated_bytes]}
  {"compiled": [steps, t_us, graphs]}   torch.compile's graph count rose (read once a second)
  {"profile": {"first", "last", "t_us", "steps", "clock", "total_us", "ops": [[name, self_us], ...]}}
                        a periodic profiler window (observe.periodic) and the steps it touched
A torn last line (a process killed mid-write) and lines of an unknown shape are skipped.
"""

from __future__ import annotations

import re
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from torchdoctor.goodput.section import OpTime, ProfileWindow

KEEP_LAST_PROFILES = 4  # the profiler windows kept: the first and the last this many


def watch_path(out_dir: str | Path, rank: int) -> Path:
    return Path(out_dir) / f"rank{rank}.watch.jsonl"


def watch_paths(out_dir: str | Path) -> dict[int, Path]:
    """Every rank's stream in `out_dir`, by rank (torchrun: one a rank)."""
    found = (re.fullmatch(r"rank(\d+)\.watch\.jsonl", p.name) for p in Path(out_dir).glob("rank*.watch.jsonl"))
    return {int(m.group(1)): Path(out_dir) / m.group(0) for m in found if m is not None}


@dataclass(frozen=True, slots=True)
class Frame:
    """One frame of the script's own code: its file, function and the line running."""

    file: str
    function: str
    line: int


@dataclass(frozen=True, slots=True)
class Stack:
    """A sampled stack: the library function innermost (`module:function`), and the script's
    frames, innermost first."""

    leaf: str
    frames: tuple[Frame, ...]


@dataclass(frozen=True, slots=True)
class Block:
    """Steps written together once the stream stopped writing them one by one."""

    first: int
    count: int
    end_s: float
    sum_s: float
    median_s: float
    max_s: float
    data_s: float


@dataclass(slots=True)
class RunStream:
    """What one process streamed, times in seconds on its own clock (`start_t_s` is `start_unix_s`)."""

    start_unix_s: float | None = None
    start_t_s: float = 0.0
    sample_interval_s: float = 0.05
    marks: list[dict[str, Any]] = field(default_factory=list)
    first_step: int = 0
    ends: dict[int, float] = field(default_factory=dict)  # step index -> end time
    data: dict[int, float] = field(default_factory=dict)  # step index -> data wait
    blocks: list[Block] = field(default_factory=list)
    slow: dict[int, tuple[float, float, float]] = field(default_factory=dict)  # index -> (end, duration, data)
    stacks: dict[int, Stack] = field(default_factory=dict)
    samples: list[tuple[int, int]] = field(default_factory=list)  # (step in progress, stack id)
    memory: list[tuple[int, float, int | None, int | None]] = field(default_factory=list)
    profiled: list[tuple[int, int]] = field(default_factory=list)  # every profiler window's steps
    compiled: list[tuple[int, float, int]] = field(default_factory=list)  # (steps, time, graphs) readings
    first_profile: ProfileWindow | None = None
    last_profiles: deque[ProfileWindow] = field(default_factory=lambda: deque(maxlen=KEEP_LAST_PROFILES))

    @property
    def profiles(self) -> list[ProfileWindow]:
        """The profiler windows kept: the first and the last KEEP_LAST_PROFILES."""
        return [*([self.first_profile] if self.first_profile else []), *self.last_profiles]

    def mark(self, name: str) -> dict[str, Any] | None:
        """The last mark of that name (None: never reached)."""
        found = [m for m in self.marks if m.get("name") == name]
        return found[-1] if found else None


def stack_of(item: list[Any]) -> tuple[int, Stack]:
    """A `stack` line's id and stack."""
    stack_id, leaf, frames = item
    return int(stack_id), Stack(str(leaf), tuple(Frame(str(f), str(fn), int(n)) for f, fn, n in frames))


def _block(item: dict[str, Any]) -> Block:
    return Block(first=int(item["first"]), count=int(item["count"]), end_s=item["end_us"] / 1e6,
                 sum_s=item["sum_us"] / 1e6, median_s=item["median_us"] / 1e6, max_s=item["max_us"] / 1e6,
                 data_s=item["data_us"] / 1e6)


def _profile(run: RunStream, item: dict[str, Any]) -> None:
    total = item["total_us"] / 1e6
    window = ProfileWindow(t_s=item["t_us"] / 1e6, first_step=int(item["first"]), last_step=int(item["last"]),
                           steps=int(item["steps"]), clock=str(item["clock"]), total_s=total,
                           ops=[OpTime(str(name), us / 1e6, us / 1e6 / total if total > 0 else 0.0)
                                for name, us in item["ops"]])
    run.profiled.append((window.first_step, window.last_step))
    if run.first_profile is None:
        run.first_profile = window
    else:
        run.last_profiles.append(window)


def _apply(run: RunStream, item: dict[str, Any]) -> None:
    if "steps" in item:
        first = int(item["steps"]["first"])
        for i, (end, data) in enumerate(zip(item["steps"]["end_us"], item["steps"]["data_us"])):
            run.ends[first + i], run.data[first + i] = end / 1e6, data / 1e6
    elif "block" in item:
        run.blocks.append(_block(item["block"]))
        for index, end, duration, data in item.get("slow", []):
            run.slow[int(index)] = (end / 1e6, duration / 1e6, data / 1e6)
    elif "samples" in item:
        run.samples.extend((int(step), int(stack)) for step, stack in item["samples"])
    elif "stack" in item:
        stack_id, stack = stack_of(item["stack"])
        run.stacks[stack_id] = stack
    elif "mem" in item:
        steps, t_us, rss, cuda = item["mem"]
        run.memory.append((int(steps), t_us / 1e6, rss, cuda))
    elif "mark" in item:
        run.marks.append({**item["mark"], "t_s": item["mark"]["t_us"] / 1e6})
    elif "profile" in item:
        _profile(run, item["profile"])
    elif "compiled" in item:
        steps, t_us, graphs = item["compiled"]
        run.compiled.append((int(steps), t_us / 1e6, int(graphs)))
    elif "restart" in item:
        run.first_step = max(run.first_step, int(item["restart"]))
    elif "start" in item:
        run.start_unix_s = item["start"]["unix_ns"] / 1e9
        run.start_t_s = item["start"]["t_us"] / 1e6
        run.sample_interval_s = float(item["start"]["sample_interval_s"])


class StreamFollower:
    """Reads a stream as it grows, into one `RunStream`: each `read` applies the complete lines
    written since the last (a torn last line waits for the next read, the writer may be finishing
    it). The same reader serves the live view while the script runs and the breakdown after it:
    `read(final=True)` once the writer is gone takes the file to its end."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.run = RunStream()
        self.lines = 0  # lines applied so far
        self._offset = 0

    def read(self, *, final: bool = False) -> int:
        """Apply the lines written since the last read; returns how many were applied. `final`:
        the writer is gone, so a last line without its newline is tried too (a torn one is skipped)."""
        try:
            with self.path.open("rb") as f:
                f.seek(self._offset)
                chunk = f.read()
        except OSError:
            return 0
        complete = chunk if final else chunk[: chunk.rfind(b"\n") + 1]
        self._offset += len(complete)
        before = self.lines
        for line in complete.splitlines():
            try:
                item = orjson.loads(line)
                if isinstance(item, dict):
                    _apply(self.run, item)
                    self.lines += 1
            except (orjson.JSONDecodeError, KeyError, TypeError, ValueError, IndexError):
                continue
        return self.lines - before


def read_watch(path: Path) -> RunStream | None:
    """The stream at `path`, read to its end (None: no file, or no readable line in it)."""
    follower = StreamFollower(path)
    follower.read(final=True)
    return follower.run if follower.lines else None
