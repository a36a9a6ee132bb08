"""Precision knobs: bf16 autocast (CPU and GPU), fp16 autocast with a GradScaler (GPUs without
bf16), and TF32 matmuls (`set_float32_matmul_precision("high")`, Ampere and later).

Autocast wraps the outermost module's forward from its second call on; the loss computed outside
the model then runs on the autocast output, as in the AMP recipe's "forward under autocast".
"""

from __future__ import annotations

import functools
from typing import Any, Callable

import torch

from torchdoctor.knobs import guard
from torchdoctor.environment import TorchSwitches
from torchdoctor.capability import Precision, cpu_precision, gpu_precision, host_isa_flags
from torchdoctor.knobs.base import GENERIC, Knob, ScriptNames, SiteEdit, Undo, environment, register
from torchdoctor.knobs.patching import at_first_root_forward, chain, patch_attr, wrap_forward
from torchdoctor.record import Record


def _device_type(module: torch.nn.Module) -> str:
    parameter = next(module.parameters(), None)
    return parameter.device.type if parameter is not None else "cpu"


def _autocast_forward(dtype: torch.dtype) -> Undo:
    def action(module: torch.nn.Module) -> Undo:
        device = _device_type(module)

        def wrapper(forward: Callable[..., Any]) -> Callable[..., Any]:
            @functools.wraps(forward)
            def autocast_forward(*args: Any, **kwargs: Any) -> Any:
                with torch.autocast(device_type=device, dtype=dtype):
                    return forward(*args, **kwargs)
            return autocast_forward

        return wrap_forward(module, wrapper)

    return at_first_root_forward(action)


def _already_autocast(record: Record) -> bool:
    state = environment(record).forward_state
    return bool(state and state.autocast)


def _run_device(record: Record) -> str:
    """The device type the run's models sat on ("cuda", "cpu", ...): the autocast snippet names it."""
    devices = environment(record).model_devices()
    gpu = sorted(devices - {"cpu", "meta"})
    return gpu[0] if gpu else "cpu" if devices else ("cuda" if torch.cuda.is_available() else "cpu")


def device_precision(record: Record) -> Precision:
    """The capability table's row for the run's device: its first GPU (by compute capability and
    name; ROCm where torch was built for HIP), else this machine's CPU by its ISA flags (the knob
    runs where the script runs)."""
    env = environment(record)
    if env.gpus:
        rocm = bool(env.versions and env.versions.hip)
        return gpu_precision(env.gpus[0].compute_capability, env.gpus[0].name, rocm)
    return cpu_precision(host_isa_flags())


def _fp32_model(record: Record) -> bool:
    return any("float32" in m.parameter_dtypes for m in environment(record).models)


@register
class AutocastBF16(Knob):
    name = "autocast_bf16"
    loss_rtol = 5e-2
    argmax_agreement = 0.9
    changes_numerics = True
    summary = "run the forward in bfloat16 autocast"

    device = "cuda" if torch.cuda.is_available() else "cpu"  # set by applies() from the run's models

    def applies(self, record: Record) -> bool:
        """bf16 where the device runs it (the capability table: sm80 and later, MI100 and later, a
        CPU with AVX512-BF16 or AMX), never where that is not known."""
        self.device = _run_device(record)
        return bool(device_precision(record).bf16) and _fp32_model(record) and not _already_autocast(record)

    def apply(self, value: Any) -> Undo:
        return _autocast_forward(torch.bfloat16)

    def code_change(self, value: Any, names: ScriptNames = GENERIC) -> str:
        return (f'with torch.autocast(device_type="{self.device}", dtype=torch.bfloat16):\n'
                f"    output = {names.model}(inputs)\n    loss = loss_fn(output, target)")


@register
class AutocastFP16(Knob):
    name = "autocast_fp16"
    loss_rtol = 5e-2
    argmax_agreement = 0.9
    changes_numerics = True
    summary = "fp16 autocast with a GradScaler, for GPUs without bfloat16"

    def applies(self, record: Record) -> bool:
        """On a GPU whose fp16 runs on Tensor Cores and bf16 does not, or is not known to (sm70,
        sm75, an unknown GPU: fp16 with a GradScaler is the conservative choice)."""
        precision = device_precision(record)
        on_gpu = bool(environment(record).gpus)
        return (on_gpu and precision.fp16 is not False and not precision.bf16 and _fp32_model(record)
                and not _already_autocast(record))

    def apply(self, value: Any) -> Undo:
        undos = [_autocast_forward(torch.float16)]
        if torch.cuda.is_available():  # the scaler only matters where fp16 gradients can underflow
            undos.append(_grad_scaling(torch.amp.GradScaler("cuda")))
        return chain(undos)

    def code_change(self, value: Any, names: ScriptNames = GENERIC) -> str:
        return ('scaler = torch.amp.GradScaler("cuda")\n'
                'with torch.autocast(device_type="cuda", dtype=torch.float16):\n'
                f"    loss = loss_fn({names.model}(inputs), target)\n"
                f"scaler.scale(loss).backward()\nscaler.step({names.optimizer})\nscaler.update()")


def _grad_scaling(scaler: torch.amp.GradScaler) -> Undo:
    """Scale every loss before backward and route each optimizer's step through the scaler."""
    original_backward = torch.Tensor.backward

    def scaled_backward(self: torch.Tensor, *args: Any, **kwargs: Any) -> Any:
        target = scaler.scale(self) if self.numel() == 1 and self.requires_grad else self
        return original_backward(target, *args, **kwargs)

    def scaled_step_for(optimizer: torch.optim.Optimizer) -> None:
        def step(*args: Any, **kwargs: Any) -> Any:
            del optimizer.step  # scaler.step calls the class's own step
            try:
                result = scaler.step(optimizer, *args, **kwargs)
                scaler.update()
            finally:
                optimizer.step = step  # type: ignore[method-assign]
            return result
        optimizer.step = step  # type: ignore[method-assign]

    original_init = torch.optim.Optimizer.__init__

    def init(self: torch.optim.Optimizer, *args: Any, **kwargs: Any) -> None:
        original_init(self, *args, **kwargs)
        scaled_step_for(self)

    undos = [patch_attr(torch.Tensor, "backward", scaled_backward),
             patch_attr(torch.optim.Optimizer, "__init__", init)]
    return chain(undos)


@register
class TF32(Knob):
    name = "tf32"
    loss_rtol = 1e-2
    argmax_agreement = 0.98
    changes_numerics = True
    summary = "TensorFloat-32 matmuls and convolutions (Ampere and later)"

    def applies(self, record: Record) -> bool:
        precision = (environment(record).torch or TorchSwitches()).float32_matmul_precision
        return bool(device_precision(record).tf32) and (precision or "highest") == "highest"

    def apply(self, value: Any) -> Undo:
        """TF32 on, and held on: the script's `set_float32_matmul_precision("highest")`,
        `torch.backends.cuda.matmul.allow_tf32 = False` and `torch.backends.cudnn.allow_tf32 =
        False` are ignored and recorded (file:line)."""
        before = (torch.get_float32_matmul_precision(), torch.backends.cudnn.allow_tf32)
        torch.set_float32_matmul_precision("high")
        torch.backends.cudnn.allow_tf32 = True
        holds = [guard.hold_call(torch, "set_float32_matmul_precision", self.name,
                                 lambda precision, *a, **k: precision == "highest",
                                 "torch.set_float32_matmul_precision"),
                 guard.hold_property(type(torch.backends.cudnn), "allow_tf32", self.name, True,
                                     "torch.backends.cudnn.allow_tf32"),
                 guard.hold_setattr(type(torch.backends.cuda.matmul), {"allow_tf32": True}, self.name,
                                    "torch.backends.cuda.matmul")]

        def undo() -> None:
            chain(holds)()
            torch.set_float32_matmul_precision(before[0])
            torch.backends.cudnn.allow_tf32 = before[1]

        return undo

    def site_edit(self, value: Any, call: dict[str, Any]) -> SiteEdit | None:
        if call["call"].startswith("torch.set_float32_matmul_precision"):
            return SiteEdit("args", ("set_float32_matmul_precision",), args=("high",))
        return SiteEdit("assign", value=True)

    def code_change(self, value: Any, names: ScriptNames = GENERIC) -> str:
        return 'torch.set_float32_matmul_precision("high")\ntorch.backends.cudnn.allow_tf32 = True'

    def overridden(self, value: Any, record: Record) -> str | None:
        precision = (environment(record).torch or TorchSwitches()).float32_matmul_precision
        if precision == "highest":
            return "the script set float32_matmul_precision back to 'highest'"
        return None
