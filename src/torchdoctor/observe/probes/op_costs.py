"""The operator-costs probe: two more of the script's steps profiled with FLOPs, shapes and Python
stacks, then this machine's speed of light (observe/probes/peaks.py), for the speed-of-light
accounting (torchdoctor.accounting).

Why steps of their own: FLOPs, shapes and stacks cost the profiled steps time (the Python tracer
most), and the profiler window's steps are read as the script's profile by the trace analysis; so
they are recorded here, after every window, one warm-up step then two recorded ones, and none of
that overhead reaches a timed or a profiled step.

Its value (`Record.probes["op_costs"]`, docs/record-schema.md) is per recorded step: the operators
grouped by name, dtype and input shapes with their self time, FLOPs (the profiler's `with_flops`
formulas: matrix products and convolutions) and the line of the script that runs them; the totals
of the small operators (under SMALL_OP_US each), of the synchronising ones and of those the
DataLoader's fetch ran in this process (`loading`: the batch's loading, not grouped, since the step
clock's data wait already holds their time); the calls the
script's own code made (observe/probes/script_calls.py); and the peaks (of every dtype with
FLOPs, and of fp32, the reference the others are weighed against).
"""

from __future__ import annotations

import contextlib
import math
from bisect import bisect_right
import os
import re
import sys
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from torchdoctor.accounting.operators import is_matrix
from torchdoctor.observe.probes.base import Phase, ProbeContext, probe
from torchdoctor.observe.probes.op_alone import alone_seconds
from torchdoctor.observe.probes.peaks import measure_peaks, peaks_cache_path
from torchdoctor.observe.probes.profiled_ops import SMALL_OP_US, _self_ns
from torchdoctor.observe.probes.script_calls import FETCH, script_calls
from torchdoctor.probe_values import OP_COSTS

WARMUP, ACTIVE = 1, 2
#: Operator groups kept in the value, largest self time first (the rest are summed in the totals).
MAX_GROUPS = 40
#: Operators whose time is a wait for the device or a copy of a device value to the host.
SYNC_OPS = frozenset({"aten::item", "aten::_local_scalar_dense", "cudaDeviceSynchronize",
                      "cudaStreamSynchronize", "cudaEventSynchronize", "aten::equal", "aten::is_nonzero"})
DTYPES = {"float": "fp32", "double": "fp64", "c10::BFloat16": "bf16", "c10::Half": "fp16",
          "c10::Float8_e4m3fn": "fp8", "c10::Float8_e5m2": "fp8", "long int": "int64", "int": "int32"}
ELEMENT_BYTES = {"double": 8, "long int": 8, "float": 4, "int": 4, "c10::BFloat16": 2, "c10::Half": 2,
                 "short int": 2, "bool": 1, "signed char": 1, "unsigned char": 1}
_FRAME = re.compile(r"^(?P<file>.*)\((?P<line>\d+)\): (?P<func>.*)$")


@dataclass
class _Group:
    count: int = 0
    self_ns: int = 0
    flops: int = 0
    bytes: int = 0
    sources: Counter[str] = field(default_factory=Counter)
    inputs: list[list[Any]] = field(default_factory=list)  # [[shape, dtype], ...] of its first call


class ScriptFiles:
    """Tells the script's own files from Python's, torch's and the installed packages' in the Python
    tracer's frame names, which give a file relative to the `sys.path` entry it was found under: a
    frame is the script's when its file is in the script's folder (`script_dir`)."""

    def __init__(self, script_dir: str) -> None:
        self._dir = script_dir
        self._known: dict[str, str | None] = {}

    def path(self, name: str) -> str | None:
        """The frame's file as a path under the script's folder, or None for a library's."""
        if name not in self._known:
            roots = [""] if os.path.isabs(name) else [self._dir, *(p for p in sys.path if p)]
            found = (os.path.abspath(os.path.join(root, name)) for root in roots)
            inside = [c for c in found if self._dir and c.startswith(self._dir + os.sep) and os.path.isfile(c)]
            self._known[name] = os.path.relpath(inside[0], self._dir) if inside and name.endswith(".py") else None
        return self._known[name]


def _frames(events: list[Any], files: ScriptFiles) -> dict[int, list[tuple[int, int, str]]]:
    """The Python tracer's frames in the script's own files, per thread: (start, end, 'file:line
    (func)'), by start; the line is where the function starts (the tracer records calls)."""
    frames: dict[int, list[tuple[int, int, str]]] = {}
    for e in events:
        if not e.is_python_function():
            continue
        match = _FRAME.match(e.name())
        path = files.path(match["file"]) if match else None
        if match and path:
            frames.setdefault(e.start_thread_id(), []).append(
                (e.start_ns(), e.end_ns(), f"{path}:{match['line']} ({match['func']})"))
    return {thread: sorted(f, key=lambda x: (x[0], -x[1])) for thread, f in frames.items()}


def _sources(ordered: list[Any], frames: dict[int, list[tuple[int, int, str]]]) -> list[str | None]:
    """The innermost script frame around each operator (`ordered` by thread, then start), in one
    sweep per thread: frames nest, so a stack of the open ones holds the answer."""
    out: list[str | None] = []
    thread, stack, index = None, [], 0
    pending: list[tuple[int, int, str]] = []
    for e in ordered:
        if e.start_thread_id() != thread:
            thread, stack, index = e.start_thread_id(), [], 0
            pending = frames.get(thread, [])
        start = e.start_ns()
        while index < len(pending) and pending[index][0] <= start:
            stack.append(pending[index])
            index += 1
        while stack and stack[-1][1] < e.end_ns():
            stack.pop()
        out.append(stack[-1][2] if stack else None)
    return out


def _dtype(event: Any) -> str:
    names = [d for d in event.dtypes() if d and d != "Scalar"]
    return DTYPES.get(names[0], names[0]) if names else "-"


def _shapes(event: Any) -> str:
    return "x".join(str(list(s)) for s in event.shapes() if s) or "-"


def _flops(event: Any) -> int:
    """The profiler's FLOPs of a matrix product or convolution; 0 for any other operator (the profiler
    also counts an elementwise add or mul, a FLOP an element: memory-bound work that a matrix
    product's peak does not measure)."""
    return max(0, event.flops()) if is_matrix(event.name()) else 0


def _bytes(event: Any) -> int:
    """Bytes an operator moves at least: its tensor inputs read and as much written (the profiler
    records no output shapes, so the output is taken as large as the largest input)."""
    sizes = [math.prod(s) * ELEMENT_BYTES.get(d, 4) for s, d in zip(event.shapes(), event.dtypes()) if s]
    return sum(sizes) + max(sizes, default=0)


def _kind(name: str, flops: int, self_ns: int) -> str:
    """What bounds an operator: 'sync', 'compute' (it has FLOPs), 'small' (shorter than dispatching
    it), else 'memory'."""
    if name in SYNC_OPS:
        return "sync"
    if flops > 0 or is_matrix(name):
        return "compute"  # a convolution's backward has no FLOPs counted, and is compute all the same
    return "small" if self_ns < SMALL_OP_US * 1e3 else "memory"


def summarise(events: list[Any], steps_ns: list[int], files: ScriptFiles) -> dict[str, Any]:
    """The value of the probe from the profiler's raw events of `len(steps_ns)` recorded steps."""
    cpu = [e for e in events if e.device_type() == torch.autograd.DeviceType.CPU
           and not e.is_python_function() and not e.is_user_annotation()]
    ordered = sorted(cpu, key=lambda e: (e.start_thread_id(), e.start_ns(), -e.end_ns()))
    spans = [(e.start_thread_id(), e.start_ns(), e.end_ns()) for e in ordered]
    own, owner = _self_ns(spans), _flop_owners(ordered, spans)
    groups: dict[tuple[str, str, str], _Group] = {}
    by_kind: Counter[str] = Counter()
    small_count = 0
    loading = _in_loading(ordered, _fetch_spans(events))
    for index, (event, self_ns, where) in enumerate(zip(ordered, own, _sources(ordered, _frames(events, files)))):
        if loading[index]:  # the batch's loading: the step clock's data wait holds its time
            by_kind["loading"] += self_ns
            continue
        head = ordered[owner[index]] if owner[index] is not None else event
        group = groups.setdefault((head.name(), _dtype(head), _shapes(head)), _Group())
        flops = _flops(event)
        group.count += head is event
        if not group.inputs and head is event:
            group.inputs = [[list(s), d] for s, d in zip(event.shapes(), event.dtypes())]
        group.self_ns += self_ns
        group.flops += flops
        group.bytes += _bytes(event) if head is event else 0
        if where and head is event:
            group.sources[where] += 1
        kind = "compute" if owner[index] is not None else _kind(event.name(), flops, self_ns)
        by_kind[kind] += self_ns
        small_count += kind == "small"
    return {**_value(groups, steps_ns, by_kind, small_count),
            "script_calls": script_calls(events, len(steps_ns), files)}


def _fetch_spans(events: list[Any]) -> dict[int, list[tuple[int, int]]]:
    """The DataLoader's fetches of a batch in this process (script_calls.FETCH), per thread, by start."""
    spans: dict[int, list[tuple[int, int]]] = {}
    for e in events:
        if e.is_python_function() and FETCH.match(e.name()):
            spans.setdefault(e.start_thread_id(), []).append((e.start_ns(), e.end_ns()))
    return {thread: sorted(s) for thread, s in spans.items()}


def _in_loading(ordered: list[Any], spans: dict[int, list[tuple[int, int]]]) -> list[bool]:
    """For each operator, whether it started inside a fetch of its thread: a Dataset's `__getitem__`
    or a `collate_fn` ran it, and its time is already the step's wait for data."""
    out = []
    for e in ordered:
        fetches = spans.get(e.start_thread_id(), [])
        at = bisect_right(fetches, (e.start_ns(), math.inf)) - 1
        out.append(at >= 0 and fetches[at][0] <= e.start_ns() < fetches[at][1])
    return out


def _flop_owners(ordered: list[Any], spans: list[tuple[int, int, int]]) -> list[int | None]:
    """For each operator (sorted as `_self_ns` sorts them), the index of the outermost operator around
    it, itself included, that has FLOPs, or None: the profiler counts a convolution's FLOPs on
    `aten::conv2d` while its time is in the backend's operator below it, so the time below an
    operator with FLOPs is that operator's compute."""
    owners: list[int | None] = []
    stack: list[int] = []
    for index, (thread, start, _end) in enumerate(spans):
        while stack and (spans[stack[-1]][0] != thread or spans[stack[-1]][2] <= start):
            stack.pop()
        parent = owners[stack[-1]] if stack else None
        owners.append(parent if parent is not None else (index if _flops(ordered[index]) > 0 else None))
        stack.append(index)
    return owners


def _value(groups: dict[tuple[str, str, str], _Group], steps_ns: list[int], by_kind: Counter[str],
           small_count: int) -> dict[str, Any]:
    n = max(1, len(steps_ns))
    flops_by_dtype: Counter[str] = Counter()
    for (_, dtype, _), g in groups.items():
        flops_by_dtype[dtype] += g.flops
    ranked = sorted(groups.items(), key=lambda kv: -kv[1].self_ns)[:MAX_GROUPS]
    return {
        "steps": len(steps_ns),
        "step_s": sum(steps_ns) / n / 1e9,
        "ops_self_s": sum(g.self_ns for g in groups.values()) / n / 1e9,
        "ops_count": sum(g.count for g in groups.values()) / n,
        "small_ops_count": small_count / n,
        "self_s_by_kind": {k: by_kind[k] / n / 1e9 for k in ("compute", "memory", "small", "sync", "loading")},
        "flops": sum(flops_by_dtype.values()) / n,
        "flops_by_dtype": {k: v / n for k, v in flops_by_dtype.items() if v},
        "ops": [{"name": name, "dtype": dtype, "shapes": shapes, "count": g.count / n,
                 "self_s": g.self_ns / n / 1e9, "flops": g.flops / n, "bytes": g.bytes / n,
                 "source": g.sources.most_common(1)[0][0] if g.sources else None, "inputs": g.inputs}
                for (name, dtype, shapes), g in ranked],
    }


def with_alone_speeds(ops: list[dict[str, Any]], device: str) -> None:
    """Sets each operator group's `alone_s` (observe/probes/op_alone.py: one call's seconds alone on
    the same inputs; None when not replayed) and drops its `inputs`. Replayed: the longest groups
    that are neither shorter than their dispatch nor synchronising, on the CPU only (a GPU's
    kernels are not timed here)."""
    worth = [o for o in ops if o["name"] not in SYNC_OPS and o["count"]
             and o["self_s"] / o["count"] >= SMALL_OP_US * 1e-6]
    seconds = alone_seconds(worth) if device == "cpu" else [None] * len(worth)
    alone = {id(o): s for o, s in zip(worth, seconds)}
    for op in ops:
        op["alone_s"] = alone.get(id(op))
        op.pop("inputs", None)


class OpCostProbe:
    """Profiles WARMUP + ACTIVE of the script's steps, then measures the peaks (a StepProbe)."""

    label = "measuring operator costs and this machine's peak"

    def __init__(self, device: str, cache: Path | None, files: ScriptFiles) -> None:
        self._device, self._cache, self._files = device, cache, files
        self._ended = 0
        self._profiler: torch.profiler.profile | None = None
        self._value: dict[str, Any] | None = None
        self._reason: str | None = None

    @property
    def progress(self) -> tuple[int, int]:
        return self._ended, WARMUP + ACTIVE

    def begin(self) -> None:
        unrecordable = unrecordable_file()
        if unrecordable is not None:  # the operators are still measured, the script's calls not
            self._reason = (f"the profiler's Python tracer cannot record the file name {ascii(unrecordable)} "
                            "(not UTF-8), so the script's calls were not recorded")
        self._profiler = torch.profiler.profile(
            activities=[torch.profiler.ProfilerActivity.CPU], record_shapes=True, with_flops=True,
            with_stack=unrecordable is None,
            schedule=torch.profiler.schedule(wait=0, warmup=WARMUP, active=ACTIVE, repeat=1))
        self._guarded(self._profiler.start)

    def step_end(self) -> bool:
        """Runs inside the script's step: a profiler that fails ends this probe with the reason,
        never the script."""
        if self._profiler is None:
            return True
        self._ended += 1
        if not self._guarded(self._profiler.step):
            return True
        if self._ended < WARMUP + ACTIVE:
            return False
        self._finish()
        return True

    def _guarded(self, action: Callable[[], Any]) -> bool:
        """`action()`; on an error the profiler is dropped and the reason kept (False)."""
        try:
            action()
            return True
        except Exception as exc:  # the profiler's own errors: RuntimeError, and others from its C++
            self._reason = f"the profiler failed: {exc}"
            profiler, self._profiler = self._profiler, None
            with contextlib.suppress(Exception):
                profiler.stop()  # type: ignore[union-attr]
            return False

    def _finish(self) -> None:
        profiler, self._profiler = self._profiler, None
        assert profiler is not None
        profiler.stop()
        try:
            events = profiler.profiler.kineto_results.events()  # type: ignore[union-attr]
        except (AttributeError, RuntimeError) as exc:
            self._reason = f"the profiler's events could not be read ({exc})"
            return
        steps = [e.duration_ns() for e in events
                 if e.is_user_annotation() and e.name().startswith("ProfilerStep")]
        value = summarise(list(events), steps, self._files)
        if self._reason is not None:  # no Python tracer ran: no calls were seen, which is not "none made"
            value["script_calls"] = None
        with_alone_speeds(value["ops"], self._device)
        # fp32 always: the reference a matrix product in another dtype is weighed against (TD-COMP-040)
        dtypes = sorted(set(value["flops_by_dtype"]) | {"fp32"})
        value["peaks"] = measure_peaks(self._device, dtypes, self._cache)
        self._value = value

    def close(self, reason: str | None) -> None:
        if self._profiler is not None:
            self._guarded(self._profiler.stop)
            self._profiler = None
        if self._value is None:
            self._reason = self._reason or reason

    def to_dict(self) -> dict[str, Any] | None:
        if self._value is not None:
            return {**self._value, "complete": True, "reason": self._reason}
        return {"complete": False, "reason": self._reason} if self._reason else None


def unrecordable_file() -> str | None:
    """The script's file, or a loaded module's, whose name is not UTF-8, or None. torch's Python
    tracer raises on such a name in the middle of a step, and the process is not safe after it
    (a later, unrelated allocation crashes), so the tracer must not start at all."""
    names = [sys.argv[0] if sys.argv else ""]
    names += [getattr(module, "__file__", None) or "" for module in list(sys.modules.values())]
    for name in names:
        try:
            name.encode("utf-8")
        except (UnicodeEncodeError, AttributeError):
            return name if isinstance(name, str) else repr(name)
    return None


def _device() -> str:
    """Where the script's model runs: 'cuda' when CUDA is in use, else 'cpu'."""
    return "cuda" if torch.cuda.is_available() and torch.cuda.is_initialized() else "cpu"


@probe(OP_COSTS.name, Phase.AFTER_WINDOWS, order=0, applies=ProbeContext.may_probe)
def op_costs(ctx: ProbeContext) -> OpCostProbe | None:
    """Always, where probes run: the accounting reads it on every diagnosis."""
    script = os.path.abspath(sys.argv[0]) if sys.argv and sys.argv[0] else ""
    return OpCostProbe(_device(), peaks_cache_path(ctx.config.out_dir), ScriptFiles(os.path.dirname(script)))
