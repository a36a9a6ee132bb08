"""Runtime switches: cudnn.benchmark, channels_last, intra-op threads, anomaly detection off,
inference_mode for loops that never call backward, zero_grad(set_to_none=True)."""

from __future__ import annotations

import contextlib
import functools
from typing import Any, Callable

import torch

from torchdoctor.knobs import guard
from torchdoctor.environment import TorchSwitches
from torchdoctor.knobs.base import (GENERIC, CallEdit, IntRange, Knob, ScriptNames, SiteEdit, Undo, cpu_cores,
                                    cuda_capability, environment, machine_cores, module_types, register, trains)
from torchdoctor.knobs.patching import at_first_root_forward, chain, patch_attr, wrap_forward
from torchdoctor.record import Record

_CONV_TYPES = ("Conv2d", "Conv3d", "ConvTranspose2d")


def _switches(record: Record) -> TorchSwitches:
    """torch's switches as the script left them; all None when the Record lacks them."""
    return environment(record).torch or TorchSwitches()


@register
class CudnnBenchmark(Knob):
    name = "cudnn_benchmark"
    summary = "let cuDNN pick the fastest convolution algorithm for each input shape"

    def applies(self, record: Record) -> bool:
        has_conv = any(name in module_types(record) for name in _CONV_TYPES)
        return cuda_capability(record) is not None and has_conv and not _switches(record).cudnn_benchmark

    def apply(self, value: Any) -> Undo:
        before = torch.backends.cudnn.benchmark
        torch.backends.cudnn.benchmark = True
        hold = guard.hold_property(type(torch.backends.cudnn), "benchmark", self.name, True,
                                   "torch.backends.cudnn.benchmark")

        def undo() -> None:
            hold()
            torch.backends.cudnn.benchmark = before

        return undo

    def code_change(self, value: Any, names: ScriptNames = GENERIC) -> str:
        return "torch.backends.cudnn.benchmark = True"

    def site_edit(self, value: Any, call: dict[str, Any]) -> SiteEdit | None:
        return SiteEdit("assign", value=True)

    def overridden(self, value: Any, record: Record) -> str | None:
        return None if _switches(record).cudnn_benchmark else "the script set cudnn.benchmark back to False"


@register
class ChannelsLast(Knob):
    name = "channels_last"
    loss_rtol = 1e-2
    argmax_agreement = 0.98
    summary = "NHWC memory format for convolution nets (model and 4-D inputs)"

    def applies(self, record: Record) -> bool:
        return any(name in module_types(record) for name in ("Conv2d", "ConvTranspose2d"))

    def apply(self, value: Any) -> Undo:
        def action(module: torch.nn.Module) -> Undo:
            module.to(memory_format=torch.channels_last)
            return wrap_forward(module, _channels_last_inputs)

        return at_first_root_forward(action)

    def code_change(self, value: Any, names: ScriptNames = GENERIC) -> str:
        return (f"{names.model} = {names.model}.to(memory_format=torch.channels_last)\n"
                "inputs = inputs.to(memory_format=torch.channels_last)")


def _channels_last_inputs(forward: Callable[..., Any]) -> Callable[..., Any]:
    def convert(item: Any) -> Any:
        if isinstance(item, torch.Tensor) and item.dim() == 4:
            return item.contiguous(memory_format=torch.channels_last)
        return item

    @functools.wraps(forward)
    def run(*args: Any, **kwargs: Any) -> Any:
        return forward(*map(convert, args), **{k: convert(v) for k, v in kwargs.items()})
    return run


@register
class Threads(Knob):
    name = "threads"
    kind = "int"
    summary = "intra-op threads (torch.set_num_threads, OMP_NUM_THREADS, MKL_NUM_THREADS)"

    def applies(self, record: Record) -> bool:
        return cpu_cores(record) > 1

    def int_range(self, record: Record) -> IntRange:
        """First guess: half the threads the script uses (at most the cores), the value that holds
        up on a shared machine. One thread per core was tried as the first guess and undone: while
        other jobs held a core, two threads on two cores measured x0.70 against the script's 16
        (tests/tune/scripts/threads16.py) and collapsed 6-15x in a re-measurement
        (benchmarks/results/2026-12-04-tune-zoo.md, the anomaly row); the search still reaches the
        cores with more `--int-trials`. Nor does the
        threads probe's count come first when it measured faster in the baseline's own run: in the
        test suite, beside another test worker, the probe's 2 threads then measured x0.77 against
        threads16's 16 in tune's trial a minute later, where 1 thread is kept
        (benchmarks/results/2026-12-03-field.md, run 12)."""
        cores = cpu_cores(record)
        current = _switches(record).num_threads or cores
        return IntRange(low=1, high=cores, first=max(1, min(cores, current) // 2))

    def current(self, record: Record) -> Any:
        return _switches(record).num_threads

    def value_range(self) -> tuple[int, int]:
        """Up to 4 threads a core: more only costs memory (libgomp reserves a stack per thread)."""
        return 1, machine_cores() * 4

    def apply(self, value: Any) -> Undo:
        """Set the threads, and hold them: the script's own `torch.set_num_threads(n)` and
        `os.environ["OMP_NUM_THREADS"] = ...` are ignored and recorded (file:line)."""
        before = torch.get_num_threads()
        threads = int(value)
        torch.set_num_threads(threads)
        holds = [guard.hold_call(torch, "set_num_threads", self.name, lambda n, *a, **k: int(n) != threads,
                                 "torch.set_num_threads"),
                 guard.hold_environ({"OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads)}, self.name)]
        undo_holds = chain(holds)

        def undo() -> None:
            undo_holds()
            torch.set_num_threads(before)

        return undo

    def env(self, value: Any) -> dict[str, str]:
        return {"OMP_NUM_THREADS": str(value), "MKL_NUM_THREADS": str(value)}

    def code_change(self, value: Any, names: ScriptNames = GENERIC) -> str:
        return f"torch.set_num_threads({value})  # and OMP_NUM_THREADS={value} MKL_NUM_THREADS={value}"

    def site_edit(self, value: Any, call: dict[str, Any]) -> SiteEdit | None:
        if call.get("variable"):
            return SiteEdit("assign", value=str(int(value)))
        return SiteEdit("args", ("set_num_threads",), args=(int(value),))

    def overridden(self, value: Any, record: Record) -> str | None:
        threads = _switches(record).num_threads
        if threads is not None and threads != int(value):
            return f"the script set torch.set_num_threads({threads}) itself, after the knob's {value}"
        return None


@register
class NoAnomalyDetection(Knob):
    name = "no_anomaly_detection"
    summary = "turn off autograd anomaly detection, a debugging switch that slows every op"

    def applies(self, record: Record) -> bool:
        return bool(_switches(record).anomaly_detection)

    def apply(self, value: Any) -> Undo:
        """Anomaly detection off, and held off: the script's switches become no-ops, each
        recorded (file:line)."""
        torch.autograd.set_detect_anomaly(False)
        undos = [patch_attr(torch.autograd, "set_detect_anomaly", _ignore_anomaly),
                 patch_attr(torch.autograd.anomaly_mode.set_detect_anomaly, "__init__", _ignore_anomaly_init),
                 patch_attr(torch.autograd.anomaly_mode.detect_anomaly, "__enter__", _ignore_detect_anomaly),
                 patch_attr(torch.autograd.anomaly_mode.detect_anomaly, "__exit__", lambda self, *a: None)]
        return chain(undos)

    def code_change(self, value: Any, names: ScriptNames = GENERIC) -> str:
        return "# remove torch.autograd.set_detect_anomaly(True) / detect_anomaly() from the training loop"

    def site_edit(self, value: Any, call: dict[str, Any]) -> SiteEdit | None:
        return SiteEdit("delete")

    def overridden(self, value: Any, record: Record) -> str | None:
        return "anomaly detection was still on at the end of the run" if _switches(record).anomaly_detection else None


def _ignore_anomaly(mode: bool = True, check_nan: bool = True) -> contextlib.nullcontext:
    if mode:
        guard.note("no_anomaly_detection", f"torch.autograd.set_detect_anomaly({mode!r})")
    return contextlib.nullcontext()


def _ignore_anomaly_init(self: Any, mode: bool = True, check_nan: bool = True) -> None:
    if mode:
        guard.note("no_anomaly_detection", f"torch.autograd.set_detect_anomaly({mode!r})")
    self.prev, self.prev_check_nan = torch.is_anomaly_enabled(), torch.is_anomaly_check_nan_enabled()


def _ignore_detect_anomaly(self: Any) -> None:
    guard.note("no_anomaly_detection", "torch.autograd.detect_anomaly()")


@register
class InferenceMode(Knob):
    name = "inference_mode"
    loss_rtol = 1e-6
    summary = "run the forward under torch.inference_mode() (the loop never calls backward)"

    def applies(self, record: Record) -> bool:
        state = environment(record).forward_state
        return bool(record.steps) and not trains(record) and not (state and state.inference_mode)

    def apply(self, value: Any) -> Undo:
        def action(module: torch.nn.Module) -> Undo:
            return wrap_forward(module, _inference_forward)

        return at_first_root_forward(action)

    def code_change(self, value: Any, names: ScriptNames = GENERIC) -> str:
        return f"with torch.inference_mode():\n    output = {names.model}(inputs)"


def _inference_forward(forward: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(forward)
    def run(*args: Any, **kwargs: Any) -> Any:
        with torch.inference_mode():
            return forward(*args, **kwargs)
    return run


@register
class ZeroGradSetToNone(Knob):
    name = "zero_grad_set_to_none"
    summary = "zero_grad(set_to_none=True): drop gradients instead of writing zeros"

    def applies(self, record: Record) -> bool:
        return trains(record)

    def apply(self, value: Any) -> Undo:
        optimizer_zero = torch.optim.Optimizer.zero_grad
        module_zero = torch.nn.Module.zero_grad

        def held(zero: Callable[..., Any]) -> Callable[..., Any]:
            def zero_grad(self: Any, set_to_none: bool = True) -> Any:
                if not set_to_none:
                    guard.note(self_name, "zero_grad(set_to_none=False)", action="rewritten")
                return zero(self, True)
            return zero_grad

        self_name = self.name
        return chain([patch_attr(torch.optim.Optimizer, "zero_grad", held(optimizer_zero)),
                      patch_attr(torch.nn.Module, "zero_grad", held(module_zero))])

    def code_change(self, value: Any, names: ScriptNames = GENERIC) -> str:
        return f"{names.optimizer}.zero_grad(set_to_none=True)"

    def call_edit(self, value: Any) -> CallEdit:
        return CallEdit(("zero_grad",), {"set_to_none": True})
