"""How fast an operator of the profiled steps runs alone on this machine, on the same input shapes
and dtypes: the speed of light of that operator's own work, against which its time in the step is
weighed (torchdoctor.accounting).

Why the operator itself rather than the machine's peak alone: the matrix product's peak and the
copy bandwidth are what the largest, simplest work reaches. A convolution with three input
channels, a GELU (its `erf` is arithmetic, not a copy) or a random sampler never reaches them,
whatever the script does: the distance to the peak is not what a fix can win back. The same
operator on the same shapes, run alone with warm caches, is what the step's call could take at
best, with the same threads, allocator and dispatch; what the step's call takes beyond it is the
step's (a cold cache, a strided input, a busy core).

How: each operator is rebuilt from the profiler's record of its inputs (`record_shapes`): a tensor
of each recorded shape and dtype (values in [0, 1), zeros for integers, so that an index is valid
and a square root is real), 1 for a Scalar, and the arguments after the last tensor or Scalar left
from the first one the record cannot rebuild (an int list, a string) on left to their defaults (a
convolution's stride and padding, a GELU's approximation). An operator that fails on the rebuilt
arguments (a pooling's kernel size is not in the record) is not replayed: its figure is None and the accounting falls back to
the copy bandwidth. The replays run under torch.profiler, the instrument that timed the step's
calls, so their figures compare (the profiler's own cost per call is in both), under `no_grad`,
and inside `fork_rng`: the script's random stream is left as it was.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Sequence
from typing import Any

import torch

#: Operator groups replayed, the largest self time first.
MAX_REPLAYED = 8
#: Calls per replayed operator: the first WARM ones warm caches, the allocator and the thread pool,
#: the median of the rest is the figure; fewer when they take more than BUDGET_S.
CALLS, WARM, BUDGET_S = 12, 2, 0.1
#: Tensor bytes above which an operator is not rebuilt (the script's process keeps its memory).
MAX_BYTES = 256 * 2**20
_TORCH_DTYPES = {"float": torch.float32, "double": torch.float64, "c10::BFloat16": torch.bfloat16,
                 "c10::Half": torch.float16, "long int": torch.int64, "int": torch.int32,
                 "short int": torch.int16, "bool": torch.bool, "signed char": torch.int8,
                 "unsigned char": torch.uint8}


def rebuilt_args(shapes: Sequence[Sequence[int]], dtypes: Sequence[str]) -> list[Any] | None:
    """The arguments of an operator rebuilt from its recorded input shapes and dtypes, up to the
    first one the record cannot rebuild (an int list, a string, None: left to its default; module
    docstring); None without a tensor among them, or when they are too large."""
    args: list[Any] = []
    for shape, dtype in zip(shapes, dtypes):
        if dtype == "Scalar":
            args.append(1)
        elif dtype in _TORCH_DTYPES:
            args.append(_tensor(list(shape), _TORCH_DTYPES[dtype]))
        else:
            break
    tensors = [a for a in args if isinstance(a, torch.Tensor)]
    nbytes = sum(a.numel() * a.element_size() for a in tensors)
    return args if tensors and nbytes <= MAX_BYTES else None


def _tensor(shape: list[int], dtype: torch.dtype) -> torch.Tensor:
    if dtype.is_floating_point:
        return torch.rand(shape).to(dtype)
    return torch.zeros(shape, dtype=dtype)


def _operator(name: str) -> Any | None:
    """The `torch.ops.aten` operator of a profiler name (`aten::gelu`), or None."""
    namespace, _, op = name.partition("::")
    if namespace != "aten" or not op:
        return None
    with contextlib.suppress(AttributeError, RuntimeError):
        return getattr(torch.ops.aten, op)
    return None


def alone_seconds(ops: Sequence[dict[str, Any]]) -> list[float | None]:
    """Per operator group (`name`, `inputs`: [[shape, dtype], ...]), the seconds one call takes
    alone on the same inputs (the median of its profiled calls after WARM, inclusive of the
    operators it calls), or None where it could not be replayed (module docstring)."""
    out: list[float | None] = [None] * len(ops)
    with torch.random.fork_rng(devices=[]), torch.no_grad():
        calls = []
        for index, op in enumerate(ops[:MAX_REPLAYED]):
            inputs = op.get("inputs") or []
            function = _operator(str(op.get("name")))
            args = rebuilt_args([s for s, _ in inputs], [d for _, d in inputs]) if function is not None else None
            runs = _first_that_runs(function, args) if args is not None else None
            if runs is not None:
                calls.append((index, function, runs))
        for index, seconds in (_profiled(calls) if calls else {}).items():
            out[index] = seconds
    return out


def _profiled(calls: list[tuple[int, Any, list[Any]]]) -> dict[int, float]:
    """{index: median seconds of one call}, timed by torch.profiler."""
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        for index, function, args in calls:
            _repeat(index, function, args)
    return _medians(prof.profiler.kineto_results.events())  # type: ignore[union-attr]


def _first_that_runs(function: Any, args: list[Any]) -> list[Any] | None:
    """`args`, or `args` less its trailing Scalars (keyword-only in the schema: an `addmm`'s beta
    and alpha), whichever `function` accepts first; None when it accepts neither."""
    tensors = max(i for i, a in enumerate(args) if isinstance(a, torch.Tensor)) + 1
    for attempt in (args, args[:tensors]) if tensors < len(args) else (args,):
        try:
            function(*attempt)
            return attempt
        except Exception:  # noqa: BLE001 - any error of a rebuilt call: try the next, or not replayed
            continue
    return None


def _repeat(index: int, function: Any, args: list[Any]) -> None:
    """Calls `function(*args)` CALLS times, each in its own `torchdoctor.alone.<index>` range, or
    fewer (at least WARM + 1) once BUDGET_S has passed."""
    start = time.perf_counter()
    for done in range(CALLS):
        if done > WARM and time.perf_counter() - start > BUDGET_S:
            return
        with torch.profiler.record_function(f"torchdoctor.alone.{index}"):
            function(*args)


def _medians(events: Sequence[Any]) -> dict[int, float]:
    """The median duration of the operator inside each `torchdoctor.alone.N` range, the WARM first
    calls left out."""
    ranges: dict[int, list[tuple[int, int]]] = {}
    for e in events:
        name = e.name()
        if e.is_user_annotation() and name.startswith("torchdoctor.alone."):
            ranges.setdefault(int(name.rsplit(".", 1)[1]), []).append((e.start_ns(), e.end_ns()))
    ops = sorted((e.start_ns(), e.end_ns()) for e in events
                 if not e.is_user_annotation() and not e.is_python_function()
                 and e.device_type() == torch.autograd.DeviceType.CPU)
    out: dict[int, float] = {}
    for index, spans in ranges.items():
        durations = sorted(_outermost(ops, start, end) for start, end in sorted(spans)[WARM:])
        if durations and durations[len(durations) // 2] > 0:
            out[index] = durations[len(durations) // 2] / 1e9
    return out


def _outermost(ops: list[tuple[int, int]], start: int, end: int) -> int:
    """The duration of the longest operator inside [start, end] (the replayed one: those it calls
    are inside it), ns."""
    return max((e - s for s, e in ops if s >= start and e <= end), default=0)

