"""The lean observation of a whole run (`torchdoctor watch`), inside the observed process.

What it keeps, from the process's set-up to its end: each step's end time and data wait (pushed
by the step hook, one `deque.append` a step), the epochs (each `iter(DataLoader)`), the process's
memory (RSS, and the CUDA allocator's allocated bytes once CUDA is in use) four times a second,
torch.compile's graph count (torch._dynamo's counters) once a second, and a stack sample of the
main thread every `sample_interval_s`: the frames of the script's own
files (what `sys._current_frames()` shows), so that a slow step is named by the function and line
that ran in it. A daemon thread does the sampling and the writing; the step's hot path does
nothing else.

Everything goes to `<out_dir>/rank<RANK>.watch.jsonl` (goodput.stream reads it), one
`os.write` a second, so that a run killed mid-way keeps what was seen up to its last second. The
size is bounded: the first `raw_steps` steps are written one by one (about 8 bytes each), later
ones as one block a second (count, sum, median, max) plus the steps slower than twice the median
of the first block; past `max_bytes`, stack samples and memory readings are written ten times less
often. Why a thread and a file rather than the results file at the end: a run of days is killed
more often than it ends.
"""

from __future__ import annotations

import os
import statistics
import sys
import sysconfig
import threading
import time
from collections import deque
from pathlib import Path
from typing import Any, Callable

import orjson

from torchdoctor.goodput.stream import watch_path

_FLUSH_S = 1.0
_MEMORY_S = 0.25
_MAX_DEPTH = 12  # user frames kept a sample, innermost first


def _library_roots() -> tuple[str, ...]:
    """Folders whose files are not the script's: the interpreter's, installed packages, torchdoctor."""
    paths = sysconfig.get_paths()
    roots = {paths.get(key, "") for key in ("stdlib", "platstdlib", "purelib", "platlib")}
    roots |= {sys.prefix, sys.base_prefix, str(Path(__file__).resolve().parents[1])}
    return tuple(sorted(r for r in roots if r))


class StackSampler:
    """Names what the main thread runs: the script's own frames of its stack, interned as ids."""

    def __init__(self, main_ident: int) -> None:
        self.main_ident = main_ident
        self._roots = _library_roots()
        self._is_user: dict[str, bool] = {}
        self.stacks: dict[tuple[Any, ...], int] = {}
        self.new_stacks: list[tuple[int, list[Any]]] = []

    def user_file(self, filename: str) -> bool:
        known = self._is_user.get(filename)
        if known is None:
            known = not filename.startswith("<") and not filename.startswith(self._roots)
            self._is_user[filename] = known
        return known

    def user_frames(self, frame: Any) -> tuple[list[list[Any]], str]:
        """The script's frames from `frame` outwards ([file, function, line] each), and the
        innermost frame's function as `module:function` (the library call it is in)."""
        leaf = f"{Path(frame.f_code.co_filename).stem}:{frame.f_code.co_name}" if frame is not None else ""
        frames: list[list[Any]] = []
        while frame is not None and len(frames) < _MAX_DEPTH:
            code = frame.f_code
            if self.user_file(code.co_filename):
                frames.append([code.co_filename, code.co_name, frame.f_lineno])
            frame = frame.f_back
        return frames, leaf

    def sample(self) -> int | None:
        """The id of the main thread's stack now (None: no frame of the script's in it)."""
        frame = sys._current_frames().get(self.main_ident)
        frames, leaf = self.user_frames(frame)
        if not frames:
            return None
        key = (leaf, *(tuple(f) for f in frames))
        stack_id = self.stacks.get(key)
        if stack_id is None:
            stack_id = self.stacks[key] = len(self.stacks)
            self.new_stacks.append((stack_id, [leaf, frames]))
        return stack_id


def _compiled_graphs() -> int | None:
    """Graphs torch.compile has compiled in this process so far (torch._dynamo's own counter;
    None: Dynamo not imported)."""
    # A module being imported is in sys.modules before its names are: `counters` may not be yet.
    # `.get`, not `[]`: the defaultdict must not gain a key from this thread while Dynamo walks it.
    counters = getattr(sys.modules.get("torch._dynamo.utils"), "counters", None)
    if counters is None:
        return None
    return int(counters.get("stats", {}).get("unique_graphs", 0))


def _memory() -> tuple[int | None, int | None]:
    """(RSS bytes, CUDA allocated bytes) now; None where not known."""
    rss = None
    try:
        with open("/proc/self/statm", "rb") as f:
            rss = int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        pass
    torch = sys.modules.get("torch")
    cuda = None
    if torch is not None and torch.cuda.is_available() and torch.cuda.is_initialized():
        cuda = int(torch.cuda.memory_allocated())
    return rss, cuda


class RunWatch:
    """The whole run's step times, epochs, memory and stack samples, streamed to disk."""

    def __init__(self, out_dir: str, rank: int, *, sample_interval_s: float, raw_steps: int,
                 max_bytes: int) -> None:
        self.path = watch_path(out_dir, rank)
        self.sample_interval_s = sample_interval_s
        self.raw_steps = raw_steps
        self.max_bytes = max_bytes
        self.t0_ns = time.perf_counter_ns()
        self.count = 0  # steps ended (the main thread's; the sampler reads it)
        self.data_ns = 0  # data wait of the step in progress (the lean hooks add to it)
        self._steps: deque[tuple[int, int]] = deque()  # (end ns, data wait ns), drained by the thread
        self._events: deque[dict[str, Any]] = deque()
        self._sampler = StackSampler(threading.main_thread().ident or 0)
        self._samples: list[list[int]] = []  # [step in progress, stack id]
        self._memory: list[list[int | None]] = []  # [steps ended, t_us, RSS, CUDA allocated]
        self._written = 0  # steps written
        self._last_end_us = 0
        self._baseline_us: int | None = None  # the median step of the first block: "slow" is twice it
        self._bytes = 0
        self._graphs: int | None = None  # torch.compile's graphs at the last reading
        self._fd: int | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="torchdoctor-watch", daemon=True)
        self.at_step: Callable[[], None] | None = None  # called at a step's end while set (a window)
        self._window: Callable[[], None] | None = None
        self._window_every_s = 0.0
        self._next_window = 0.0

    # -- the main thread -------------------------------------------------------------------
    def start(self) -> None:
        try:
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        except OSError:
            pass  # written as far as the disk allows (_write); the run's end says what is missing
        self.event({"start": {"unix_ns": time.time_ns(), "t_us": self.t_us(time.perf_counter_ns()), "pid": os.getpid(),
                               "sample_interval_s": self.sample_interval_s}})
        self._thread.start()

    def step(self) -> None:
        """A step ended now (its data wait is what `data_ns` gathered)."""
        self._steps.append((time.perf_counter_ns(), self.data_ns))
        self.data_ns = 0
        self.count += 1
        if self.at_step is not None:  # a window is due or open (observe.periodic)
            self.at_step()

    def schedule(self, every_s: float, begin: Callable[[], None]) -> None:
        """Call `begin` at the next step's end, then at the first step's end `every_s` seconds after
        each `window_done`: the thread sets `at_step` when one is due, so that the step's path only
        tests it."""
        self._window, self._window_every_s, self._next_window = begin, every_s, time.monotonic()

    def window_done(self) -> None:
        """The window `begin` opened is over: the next is due `every_s` seconds from now."""
        self._next_window = time.monotonic() + self._window_every_s
        self.at_step = None

    def unschedule(self) -> None:
        """No more windows (the script ended, or a window could not open)."""
        self._window = None
        self.at_step = None

    def event(self, event: dict[str, Any]) -> None:
        """A line of the stream, written with the next flush."""
        self._events.append(event)

    def restart(self) -> None:
        """Step detection chose a better source: the steps so far were not the script's steps."""
        self.event({"restart": self.count})

    def mark(self, name: str, **fields: Any) -> None:
        """A moment of the run: the script's start and end, the lean observation's start, an epoch."""
        self.event({"mark": {"name": name, "t_us": self.t_us(time.perf_counter_ns()), "step": self.count, **fields}})

    def caller(self) -> list[str] | None:
        """[file, function] of the script's innermost frame calling this: in a step hook, the loop."""
        frames, _ = self._sampler.user_frames(sys._getframe(1))
        return frames[0][:2] if frames else None

    def finish(self, how: str) -> None:
        """The script ended (`how`): write what is left, then the end mark; safe to call twice."""
        if self._stop.is_set():
            return
        self.mark("script_end", how=how)
        self._stop.set()
        self._thread.join(timeout=2.0)
        self._read_memory()
        self._flush()
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    # -- the thread ------------------------------------------------------------------------
    def t_us(self, ns: int) -> int:
        """A `perf_counter_ns()` reading on the stream's clock (µs since the observation started)."""
        return (ns - self.t0_ns) // 1000

    def _run(self) -> None:
        next_flush = next_memory = time.monotonic()
        slow = 1
        while not self._stop.wait(self.sample_interval_s * slow):
            if self._window is not None and self.at_step is None and time.monotonic() >= self._next_window:
                self.at_step = self._window
            stack_id = self._sampler.sample()
            if stack_id is not None:
                self._samples.append([self.count, stack_id])
            if time.monotonic() >= next_memory:
                self._read_memory()
                next_memory = time.monotonic() + _MEMORY_S * slow
            if time.monotonic() >= next_flush:
                self._read_compiles()
                self._flush()
                slow = 10 if self._bytes > self.max_bytes else 1
                next_flush = time.monotonic() + _FLUSH_S * slow

    def _flush(self) -> None:
        lines = []
        while self._events:
            lines.append(self._events.popleft())
        for stack_id, stack in self._sampler.new_stacks:
            lines.append({"stack": [stack_id, *stack]})
        self._sampler.new_stacks = []
        steps = [self._steps.popleft() for _ in range(len(self._steps))]
        raw = max(0, min(len(steps), self.raw_steps - self._written))
        if raw:
            lines.append(self._steps_line(steps[:raw]))
        if len(steps) > raw:
            lines.append(self._steps_line(steps[raw:]))
        if self._samples:
            lines.append({"samples": self._samples})
            self._samples = []
        lines += [{"mem": reading} for reading in self._memory]
        self._memory = []
        self._write(b"".join(orjson.dumps(line) + b"\n" for line in lines))

    def _read_memory(self) -> None:
        rss, cuda = _memory()
        self._memory.append([self.count, self.t_us(time.perf_counter_ns()), rss, cuda])

    def _read_compiles(self) -> None:
        """A `compiled` line when torch.compile's graph count rose since the last reading."""
        graphs = _compiled_graphs()
        if graphs is not None and graphs != self._graphs:
            self._graphs = graphs
            self.event({"compiled": [self.count, self.t_us(time.perf_counter_ns()), graphs]})

    def _steps_line(self, steps: list[tuple[int, int]]) -> dict[str, Any]:
        """The steps as they were (the first `raw_steps`), or as one block and its slow steps."""
        first, previous = self._written, self._last_end_us
        ends = [self.t_us(t) for t, _ in steps]
        self._written += len(steps)
        self._last_end_us = ends[-1]
        if first < self.raw_steps:
            return {"steps": {"first": first, "end_us": ends, "data_us": [d // 1000 for _, d in steps]}}
        durations = [b - a for a, b in zip([previous, *ends], ends)]
        if self._baseline_us is None:
            self._baseline_us = int(statistics.median(durations))
        slow = [[first + i, ends[i], d, steps[i][1] // 1000] for i, d in enumerate(durations)
                if d > 2 * self._baseline_us]
        return {"block": {"first": first, "count": len(steps), "end_us": ends[-1], "sum_us": sum(durations),
                          "median_us": int(statistics.median(durations)), "max_us": max(durations),
                          "data_us": sum(d for _, d in steps) // 1000}, "slow": slow}

    def _write(self, data: bytes) -> None:
        try:
            if self._fd is None:
                self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
            os.write(self._fd, data)
            self._bytes += len(data)
        except OSError:
            pass  # a full disk must not fail the script; the run's end still reports what was kept
