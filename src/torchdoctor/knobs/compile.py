"""torch.compile of the outermost module, applied at its first forward.

The value is a dict: `mode` ("default", "reduce-overhead", "max-autotune"), `dynamic`
(True/False/None) and `backend` ("inductor" unless told; "eager" checks the mechanics without
code generation). The module's `forward` is replaced by the compiled one, so the module's own
hooks (torchdoctor's timing among them) stay outside the compiled graph.
"""

from __future__ import annotations

from typing import Any

import torch

from torchdoctor.capability import TorchVersion, supports
from torchdoctor.estimates.shapes import size_spread
from torchdoctor.knobs.base import GENERIC, ScriptNames, Knob, Undo, environment, register, step_sizes
from torchdoctor.knobs.patching import at_first_root_forward, wrap_forward
from torchdoctor.record import Record

MODES = ("default", "reduce-overhead", "max-autotune")


def _options(value: Any) -> dict[str, Any]:
    options = {"mode": "default", "dynamic": None, "backend": "inductor"}
    options.update(value if isinstance(value, dict) else {})
    if options["mode"] not in MODES:
        raise ValueError(f"compile mode must be one of {MODES}, got {options['mode']!r}")
    return options


@register
class Compile(Knob):
    name = "compile"
    kind = "choice"
    loss_rtol = 1e-2
    argmax_agreement = 0.98
    changes_numerics = True
    summary = "torch.compile the model (fused kernels, less Python overhead)"

    def applies(self, record: Record) -> bool:
        """A model to compile, not compiled already, and a torch that has torch.compile (the
        capability table: 2.0): the run's torch, else this process's."""
        env = environment(record)
        version = env.versions.torch if env.versions is not None and env.versions.torch else torch.__version__
        return bool(env.models) and not env.compile_used and bool(supports("compile", TorchVersion.exact(version)))

    def choices(self, record: Record) -> list[Any]:
        """Each mode the guides name for the device (on a CPU the default; on a GPU also
        reduce-overhead, CUDA graphs for launch-bound steps, and max-autotune), with static shapes;
        where the steps' input sizes vary, `dynamic=True` too: compiling per shape recompiles at
        each new one (TD-COMP-019/021's fix). CUDA graphs record per shape, so reduce-overhead is
        tried static only."""
        modes = ["default"] + (["reduce-overhead", "max-autotune"] if environment(record).cuda_available else [])
        values: list[Any] = [{"mode": mode, "dynamic": False} for mode in modes]
        if varying_shapes(record):
            values += [{"mode": mode, "dynamic": True} for mode in modes if mode != "reduce-overhead"]
        return values

    def check(self, value: Any) -> None:
        if value is True:
            return  # the defaults
        if not isinstance(value, dict) or set(value) - {"mode", "dynamic", "backend"}:
            raise ValueError(f"compile takes an object with mode, dynamic and backend, got {value!r}")
        options = _options(value)
        if options["dynamic"] is not None and not isinstance(options["dynamic"], bool):  # 0 == False: not a bool
            raise ValueError(f"compile's dynamic takes true, false or null, got {options['dynamic']!r}")
        if not isinstance(options["backend"], str) or options["backend"] not in _backends():
            raise ValueError(f"compile's backend must be one of {sorted(_backends())}, got {options['backend']!r}")

    def apply(self, value: Any) -> Undo:
        options = _options(value)

        def action(module: torch.nn.Module) -> Undo:
            return wrap_forward(module, lambda forward: torch.compile(forward, **options))

        return at_first_root_forward(action)

    def code_change(self, value: Any, names: ScriptNames = GENERIC) -> str:
        options = _options(value)
        arguments = [f'mode="{options["mode"]}"']
        if options["dynamic"] is not None:
            arguments.append(f"dynamic={options['dynamic']}")
        if options["backend"] != "inductor":
            arguments.append(f'backend="{options["backend"]}"')
        return f"{names.model} = torch.compile({names.model}, {', '.join(arguments)})"


def varying_shapes(record: Record) -> bool:
    """Whether the steps' first input changed size as TD-COMP-019 says (estimates.shapes)."""
    spread = size_spread(step_sizes(record))
    return spread is not None and spread.varies


def _backends() -> set[str]:
    """The torch.compile backends this torch knows."""
    try:
        return set(torch._dynamo.list_backends(exclude_tags=()))
    except Exception:  # a torch without the listing: the two every torch has
        return {"inductor", "eager"}
