"""Compare statements or callables in this process, on top of `torch.utils.benchmark.Timer`.

Per variant: its `setup` runs once in its own namespace (globals + params + `torch`), then
`Timer.blocked_autorange` warms it up and picks the block size (calls per timed block, so that
the synchronising clock's overhead is negligible). Each round then times
`blocks_per_round` blocks with the same clock and Timer's thread setting, and the round's
sample is the median per-call time of those blocks, in seconds.

Why the round loop is ours: `Timer.timeit` re-warms (>= 2 extra calls) on every call, which
would triple the cost of a 1 s step; `blocked_autorange` re-estimates the block size each time.
We keep Timer for warm-up, calibration, device synchronisation and thread control.

Clocks: "wall" (default) is Timer's clock, wall time with the accelerator synchronised. "cpu" is
this process's CPU time (`time.process_time`): on a shared machine it ignores the time spent
waiting for a core, so it is far less noisy, but it is blind to GPU work, I/O and sleeps, so it
is refused when a variant holds non-CPU tensors; use it for CPU-bound code only.

Per-run timeout: a SIGALRM interrupts a variant whose block overruns `timeout_s`; it is only
available in the main thread on POSIX (elsewhere no timeout applies) and cannot interrupt one
long native (C++/CUDA) call before it returns.
"""

from __future__ import annotations

import math
import signal
import threading
import time
import timeit
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from torchdoctor.bench.adaptive import BenchResult, Policy, RoundInfo, run_interleaved
from torchdoctor.bench.devices import callable_bindings, check_cpu_only, check_same_devices
from torchdoctor.bench.errors import BenchInputError, VariantFailedError, VariantTimeoutError
from torchdoctor.errors import TorchDoctorError


@dataclass(frozen=True)
class Variant:
    """One thing to time: a statement (str, run in its namespace) or a zero-argument callable."""

    name: str
    stmt: str | Callable[[], Any]
    setup: str = "pass"
    globals: Mapping[str, Any] = field(default_factory=dict)


def compare_statements(
    variants: Sequence[Variant],
    *,
    policy: Policy = Policy(),
    params: Mapping[str, Any] | None = None,
    label: str = "",
    round_s: float = 0.1,
    timeout_s: float = 60.0,
    allow_mixed_devices: bool = False,
    clock: str = "wall",
    on_round: Callable[[RoundInfo], None] | None = None,
) -> BenchResult:
    """Time `variants` (the first is the baseline) in interleaved rounds and judge each.

    `params` are extra globals for every variant (e.g. {"N": 1024}, one row of a size sweep);
    `round_s` is the time each variant gets per round. Raises VariantFailedError naming the
    variant whose setup or statement raised, VariantTimeoutError on a hang, and
    MismatchedDevicesError when variants hold tensors on different devices (or, with
    clock="cpu", on any device but the CPU).
    """
    if round_s <= 0 or timeout_s <= 0:
        raise BenchInputError(f"round_s and timeout_s must be positive, got {round_s}, {timeout_s}")
    if clock not in _CLOCKS:
        raise BenchInputError(f"clock must be one of {_CLOCKS}, got {clock!r}")
    spaces = {v.name: _namespace(v, params or {}, timeout_s) for v in variants}
    bindings = {v.name: _bindings(v, spaces[v.name]) for v in variants}
    if not allow_mixed_devices:
        check_same_devices(bindings)
    if clock == "cpu":
        check_cpu_only(bindings)
    timers = {v.name: _RoundTimer(v, spaces[v.name], round_s, timeout_s, clock) for v in variants}
    return run_interleaved(
        lambda name: timers[name].sample_s(),
        [v.name for v in variants],
        policy=policy,
        label=label,
        on_round=on_round,
    )


_CLOCKS = ("wall", "cpu")


def _clock(name: str) -> Callable[[], float]:
    if name == "cpu":
        return time.process_time
    from torch.utils.benchmark.utils.timer import timer  # Timer's clock: synchronises devices

    return timer


class _RoundTimer:
    """Times one variant: calibrated once by `Timer.blocked_autorange`, one sample per round."""

    def __init__(
        self, variant: Variant, namespace: dict[str, Any], round_s: float, timeout_s: float, clock: str
    ):
        from torch.utils.benchmark import Timer

        self.name, self.timeout_s = variant.name, timeout_s
        stmt = variant.stmt if isinstance(variant.stmt, str) else "__torchdoctor_fn()"
        if not isinstance(variant.stmt, str):
            namespace = {**namespace, "__torchdoctor_fn": variant.stmt}
        self._torch_timer = Timer(stmt=stmt, globals=namespace)
        with _guard(self.name, "statement", timeout_s):
            self._timer = timeit.Timer(stmt, timer=_clock(clock), globals=namespace)
            warm = self._torch_timer.blocked_autorange(min_run_time=round_s)
        self.number = warm.number_per_run
        self.blocks_per_round = max(1, math.ceil(round_s / (warm.median * self.number)))

    def sample_s(self) -> float:
        """Median per-call time (s) over this round's blocks."""
        from torch.utils.benchmark.utils.common import set_torch_threads

        times = []
        with _guard(self.name, "statement", self.timeout_s), set_torch_threads(1):
            for _ in range(self.blocks_per_round):
                times.append(self._timer.timeit(self.number) / self.number)
        return float(np.median(times))


def _namespace(variant: Variant, params: Mapping[str, Any], timeout_s: float) -> dict[str, Any]:
    """The variant's globals after its setup ran once."""
    import torch

    namespace: dict[str, Any] = {"torch": torch, **variant.globals, **params}
    with _guard(variant.name, "setup", timeout_s):
        exec(compile(variant.setup, f"<setup of {variant.name}>", "exec"), namespace)
    return namespace


def _bindings(variant: Variant, namespace: dict[str, Any]) -> dict[str, Any]:
    """Everything the variant's code can compute with, for the device check."""
    if isinstance(variant.stmt, str):
        return namespace
    return {**namespace, **callable_bindings(variant.stmt)}


@contextmanager
def _guard(name: str, what: str, timeout_s: float) -> Iterator[None]:
    """Turn any error of the user's code into VariantFailedError; enforce the per-run timeout."""
    try:
        with _deadline(name, what, timeout_s):
            yield
    except TorchDoctorError:
        raise
    except Exception as exc:  # the user's code may raise anything; we name it and re-raise
        raise VariantFailedError(
            f"variant {name!r}: {what} raised {type(exc).__name__}: {exc}"
        ) from exc


@contextmanager
def _deadline(name: str, what: str, timeout_s: float) -> Iterator[None]:
    usable = hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()
    if not usable:
        yield
        return

    def on_alarm(signum: int, frame: object) -> None:
        raise VariantTimeoutError(
            f"variant {name!r}: {what} ran longer than the per-run timeout of {timeout_s:g} s"
        )

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, timeout_s)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
