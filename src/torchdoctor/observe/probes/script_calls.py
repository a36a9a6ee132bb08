"""What the script's own code called in the profiled steps, from the Python tracer's events.

The profiler's Python tracer (`with_stack=True`) records every Python function and every C function
(a builtin, a method of a tensor) the interpreter calls, each with its start and end. A call made
directly by a frame of the script's own files is one the user wrote (`gc.collect()`, `x.item()`,
`torch.autograd.grad(...)`, `self.net(sample)`), so grouping those calls by what was called and by
the script's function that called it names, per step, what ran and how often, inside the model
or outside it.

The value (`calls` of the operator-costs probe, docs/record-schema.md) is per recorded step: for
each (callee, caller) the number of calls, their total wall time, the part of it spent in torch
operators (the profiler's outermost operator events inside the calls, on their thread: a
`torch.cdist` or a loss is the step's computation wherever it is called, the rest is Python and
host work), whether the caller ran inside a module's forward and whether it ran inside the
DataLoader's fetch (a `Dataset.__getitem__` and what it called, in the main process); the time of
the fetch's outermost script frames (`loading_s`: what the script's dataset code took to load the
step's batch); the wall time of the script's own frames (a function, a generator expression:
its calls' time, inclusive); plus the number of calls of the outermost modules (the forwards) and the runs
of the autograd engine (one per `backward()` or `torch.autograd.grad(...)`).

Why read the tracer's events rather than trace the calls ourselves: the profiler already records
them for the operator costs, so this costs no more run time.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from collections import Counter
from typing import Any, NamedTuple, Protocol

#: (callee, caller) groups kept, the longest first and then the most called.
MAX_CALLS = 24
#: The autograd engine's entry point: one call per backward pass (`backward()`, `autograd.grad`).
ENGINE_RUN = re.compile(r"^<built-in method run_backward of torch\._C\._EngineBase object")
#: The DataLoader's fetch of one batch (`_MapDatasetFetcher.fetch`, `_IterableDatasetFetcher.fetch`).
FETCH = re.compile(r"^torch/utils/data/_utils/fetch\.py\(\d+\): fetch$")
MODULE_CALL = "nn.Module: "
_FRAME = re.compile(r"^(?P<file>.*)\((?P<line>\d+)\): (?P<func>.*)$")
_BUILTIN = re.compile(r"^<built-in (?:method (?P<method>\S+) of (?P<owner>\S+) object|function (?P<function>\S+))")
_INSTANCE = re.compile(r"_\d+$")
#: torchdoctor's own wrappers (observe/hooks.py) by the torch function each one stands for.
_WRAPPED = {"torchdoctor.observe.hooks.tensor_backward": "torch._tensor.backward",
            "torchdoctor.observe.hooks.autograd_backward": "torch.autograd.backward",
            "torchdoctor.observe.hooks.autograd_grad": "torch.autograd.grad"}


class ScriptPaths(Protocol):
    def path(self, name: str) -> str | None: ...


def callee_name(event_name: str) -> str:
    """A readable name for a called function: `Tensor.item`, `collect`, `torch.autograd.grad`,
    `nn.Module: Sequential` (the tracer's instance suffix `_0` dropped), the torch function a
    torchdoctor hook wraps (`torch._tensor.backward`), or the name as recorded."""
    if event_name.startswith(MODULE_CALL):
        return _INSTANCE.sub("", event_name)
    builtin = _BUILTIN.match(event_name)
    if builtin:
        if builtin["function"]:
            return builtin["function"].rstrip(">")
        owner = builtin["owner"]
        return builtin["method"] if owner in ("type", "module") else f"{owner}.{builtin['method']}"
    frame = _FRAME.match(event_name)
    if frame:
        module = frame["file"].removesuffix(".py").removesuffix("/__init__").replace("/", ".")
        name = f"{module}.{frame['func']}"
        return _WRAPPED.get(name, name)
    return event_name


#: Decorators' pass-through wrappers (`torch._disable_dynamo` on `checkpoint`, `zero_grad`, ...): a
#: call of one is named after the function it calls.
WRAPPERS = frozenset({"torch._compile.inner", "torch._dynamo.eval_frame._fn",
                      "torch.utils._contextlib.decorate_context"})


class OperatorTime:
    """The time in torch operators inside a span of one thread: the outermost operator events of
    the profile (those inside another are part of its time), per thread, with running sums."""

    def __init__(self, events: list[Any]) -> None:
        ops = sorted((e.start_thread_id(), e.start_ns(), e.end_ns()) for e in events
                     if not e.is_python_function() and not e.is_user_annotation()
                     and str(e.device_type()).endswith("CPU"))
        self._starts: dict[int, list[int]] = {}
        self._ends: dict[int, list[int]] = {}
        self._sums: dict[int, list[int]] = {}
        for thread, start, end in ops:
            ends = self._ends.setdefault(thread, [])
            if ends and start < ends[-1]:
                continue  # inside the previous outermost operator
            self._starts.setdefault(thread, []).append(start)
            ends.append(end)
            sums = self._sums.setdefault(thread, [0])
            sums.append(sums[-1] + end - start)

    def within(self, thread: int, start: int, end: int) -> int:
        """ns of operator time that starts in [start, end] on `thread`, cut at `end`."""
        starts = self._starts.get(thread)
        if not starts:
            return 0
        first, last = bisect_left(starts, start), bisect_right(starts, end)
        if last <= first:
            return 0
        sums = self._sums[thread]
        return sums[last] - sums[first] - max(0, self._ends[thread][last - 1] - end)


class _Group:
    __slots__ = ("count", "wall_ns", "ops_ns", "in_model", "in_loading", "drives", "wrapped", "wrapped_ns")

    def __init__(self) -> None:
        self.count, self.wall_ns, self.ops_ns, self.in_model, self.in_loading = 0, 0, 0, False, False
        self.wrapped: str | None = None  # the function a wrapper's calls ran (WRAPPERS), and its longest call
        self.wrapped_ns = 0
        self.drives: str | None = None  # the script frame these calls ran (a generator `sum` consumed)


def script_calls(events: list[Any], steps: int, files: ScriptPaths) -> dict[str, Any]:
    """The calls the script's frames made in `steps` recorded steps, per step (module docstring).

    A call's time leaves out the script's frames it runs (`sum(...)` or `list.extend(...)` driving a
    generator expression of the script's): their calls are counted under their own frame."""
    python = sorted((e for e in events if e.is_python_function()),
                    key=lambda e: (e.start_thread_id(), e.start_ns(), -e.end_ns()))
    groups: dict[tuple[str, str], _Group] = {}
    operators = OperatorTime(events)
    counts: Counter[str] = Counter()
    frames: Counter[str] = Counter()  # script frame -> its calls' wall time, ns
    thread, stack = None, []  # open events: _Open
    for e in python:
        if e.start_thread_id() != thread:
            thread, stack = e.start_thread_id(), []
        while stack and stack[-1].end_ns <= e.start_ns():
            stack.pop()
        name, wall = e.name(), e.end_ns() - e.start_ns()
        label = _script_label(name, files)
        in_model = any(o.module for o in stack)
        _count_special(name, in_model, counts)
        group, wrapped = None, None
        ops_ns = operators.within(thread, e.start_ns(), e.end_ns())
        if label is not None:
            frames[label] += wall
            _driver_less(stack, wall, ops_ns, label)
            counts["loading_ns"] += wall if _outermost_in_fetch(stack) else 0
        else:
            wrapped = _note_wrapped(stack, name, wall)
        if label is None and stack and stack[-1].label is not None:
            group = groups.setdefault((callee_name(name), stack[-1].label), _Group())
            group.count, group.wall_ns, group.in_model = group.count + 1, group.wall_ns + wall, group.in_model or in_model
            group.ops_ns += ops_ns
            group.in_loading = group.in_loading or any(o.fetch for o in stack)
        wrapper = (group or wrapped) is not None and callee_name(name) in WRAPPERS
        stack.append(_Open(e.end_ns(), label, name.startswith(MODULE_CALL), group or wrapped, bool(FETCH.match(name)),
                           wrapper))
    return _value(groups, counts, frames, max(1, steps))


class _Open(NamedTuple):
    """An event open on the tracer's stack: its end, its script label, whether it is a module call,
    the call group it was counted in (a call the script made directly), whether it is the
    DataLoader's fetch, and whether it is a call of a wrapper (WRAPPERS)."""

    end_ns: int
    label: str | None
    module: bool
    group: _Group | None
    fetch: bool = False
    wrapper: bool = False


def _note_wrapped(stack: list[_Open], name: str, wall_ns: int) -> _Group | None:
    """A wrapper the script called (WRAPPERS) is named after the longest Python function it runs
    (before it, a wrapper runs checks of its own); a wrapper it runs passes the naming on (returned:
    the group that wrapper names)."""
    parent = stack[-1] if stack else None
    if parent is None or not parent.wrapper or parent.group is None or not _FRAME.match(name):
        return None
    callee = callee_name(name)
    if callee in WRAPPERS:
        return parent.group
    if wall_ns > parent.group.wrapped_ns:
        parent.group.wrapped, parent.group.wrapped_ns = callee, wall_ns
    return None


def _outermost_in_fetch(stack: list[_Open]) -> bool:
    """A script frame starting on `stack` is the first of the script's frames inside the DataLoader's
    fetch (its `__getitem__`, its `collate_fn`): a fetch is open and no script frame lies above it."""
    for opened in reversed(stack):
        if opened.fetch:
            return True
        if opened.label is not None:
            return False
    return False


def _driver_less(stack: list[_Open], wall_ns: int, ops_ns: int, label: str) -> None:
    """A script frame `label` of `wall_ns` (`ops_ns` of it in operators) started: the innermost call
    around it, when no script frame lies between them and it is not a module call (whose own code
    it is), drove it; its time is not that call's, and the call notes the frame it drives."""
    for opened in reversed(stack):
        if opened.label is not None:
            return
        if opened.group is not None:
            if not opened.module:
                opened.group.wall_ns -= wall_ns
                opened.group.ops_ns -= ops_ns
                opened.group.drives = opened.group.drives or label
            return


def _script_label(name: str, files: ScriptPaths) -> str | None:
    """`file:line (function)` of a frame of the script's own files; None for any other event."""
    frame = _FRAME.match(name)
    path = files.path(frame["file"]) if frame else None
    return f"{path}:{frame['line']} ({frame['func']})" if frame and path else None


def _count_special(name: str, in_model: bool, counts: Counter[str]) -> None:
    """Counts the outermost module calls (forwards) and the autograd engine's runs."""
    if name.startswith(MODULE_CALL) and not in_model:
        counts["forwards"] += 1
    elif ENGINE_RUN.match(name):
        counts["backward_passes"] += 1


def _value(groups: dict[tuple[str, str], _Group], counts: Counter[str], frames: Counter[str],
           steps: int) -> dict[str, Any]:
    by_time = sorted(groups.items(), key=lambda kv: -kv[1].wall_ns)[:MAX_CALLS // 2]
    by_count = sorted(groups.items(), key=lambda kv: -kv[1].count)
    kept = dict(by_time)
    for key, group in by_count:
        if len(kept) >= MAX_CALLS:
            break
        kept.setdefault(key, group)
    return {
        "forwards": counts["forwards"] / steps,
        "backward_passes": counts["backward_passes"] / steps,
        "loading_s": counts["loading_ns"] / steps / 1e9,
        "calls": [{"callee": g.wrapped or callee, "caller": caller, "count": g.count / steps, "wall_s": g.wall_ns / steps / 1e9,
                   "ops_s": max(0, g.ops_ns) / steps / 1e9, "in_model": g.in_model, "in_loading": g.in_loading,
                   "drives": g.drives}
                  for (callee, caller), g in sorted(kept.items(), key=lambda kv: -kv[1].wall_ns)],
        "frames": {label: ns / steps / 1e9 for label, ns in frames.most_common(MAX_CALLS)},
    }
