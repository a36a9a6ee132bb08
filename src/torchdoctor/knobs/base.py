"""What a knob is, and the registry every knob module adds itself to.

A knob is one optimisation applied at run time to an unmodified script, inside the observed
child process (`apply(value)` returns the undo), together with the code change that makes it
permanent (`code_change(value)`: a snippet; `call_edit(value)`: the keyword arguments to set on a
call site, from which `torchdoctor.knobs.diff` writes a unified diff against the user's script).

Contracts:
- `applies(record)` says whether the knob makes sense for what the Record measured and for the
  devices present; it never raises on a Record that lacks a section.
- `apply(value)` must be undone completely by the callable it returns.
- `loss_rtol` is the numerics tolerance: the largest relative difference of the loss against the
  baseline's that the tuner accepts for this knob (per step when the script repeats identically,
  of the mean over the measured steps otherwise); `output_rtol` (default: `loss_rtol`) the largest
  relative L2 error of the model's outputs, and `argmax_agreement` the least share of output rows
  whose argmax must agree, where there is no loss (`torchdoctor.tune.numerics`).
- `changes_numerics`: the knob changes precision or code generation (autocast, TF32, compile), so
  the tuner never keeps it with its numerics unchecked (unless the user accepts that).
- `overridden(value, record)` reads the trial's Record and says (a sentence) when the script's own
  code undid the knob later, so the tuner reports it instead of keeping an ineffective knob.
- `check(value)` raises ValueError unless the value is one the knob can safely apply on this
  machine (`run --apply` reads values from a file: `{"threads": 1000000000}` made libgomp try to
  allocate 216 GB); integer knobs bound it by `value_range()`, wider than the search's `int_range`.
"""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from torchdoctor.environment import Environment, SystemSection, SystemSummary
from torchdoctor.record import Record

Undo = Callable[[], None]

#: Every registered knob by name, filled by the `@register` decorator as knob modules import.
REGISTRY: dict[str, "Knob"] = {}


@dataclass(frozen=True)
class CallEdit:
    """Keyword arguments to set on calls to any of `callees` (the called name's last part)."""

    callees: tuple[str, ...]
    kwargs: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class SiteEdit:
    """How to change one line of the script (a call the knob held off, `torchdoctor.knobs.guard`)
    so that the script itself keeps the knob's value. `action`:
    - "kwargs": set `kwargs` on the call to one of `callees` on that line;
    - "args": replace the leading positional arguments of the call to one of `callees` by `args`;
    - "assign": set the value assigned on that line to `value`;
    - "delete": remove the statement (a `with` statement is replaced by its body)."""

    action: str
    callees: tuple[str, ...] = ()
    kwargs: dict[str, Any] = field(default_factory=dict)
    args: tuple[Any, ...] = ()
    value: Any = None


@dataclass(frozen=True)
class ScriptNames:
    """The script's own words for what a snippet refers to (`torchdoctor.knobs.names`): the
    model and optimizer variables, the optimizer's class as the script writes it, the loader."""

    model: str = "model"
    optimizer: str = "optimizer"
    optimizer_class: str = "torch.optim.AdamW"
    loader: str = "loader"


GENERIC = ScriptNames()


@dataclass(frozen=True)
class IntRange:
    """An integer knob's search range (inclusive) and the value tried first."""

    low: int
    high: int
    first: int


class Knob(ABC):
    name: str = ""
    kind: str = "bool"  # "bool" (value True), "choice" (one of `choices`), "int" (an IntRange)
    loss_rtol: float = 1e-3
    output_rtol: float | None = None
    argmax_agreement: float = 0.99
    changes_numerics: bool = False
    changes_data_stream: bool = False  # worker processes draw other random numbers than the main one
    per_sample: bool = False  # compare time per sample, not per step (the knob changes the batch)
    summary: str = ""

    @property
    def output_tolerance(self) -> float:
        return self.output_rtol if self.output_rtol is not None else self.loss_rtol

    @abstractmethod
    def applies(self, record: Record) -> bool:
        """Whether this knob makes sense for what the Record measured and the device present."""

    def choices(self, record: Record) -> list[Any]:
        """Values to try, in order (bool knobs: [True])."""
        return [True]

    def int_range(self, record: Record) -> IntRange:
        raise TypeError(f"{self.name} is not an integer knob")

    def value_range(self) -> tuple[int, int]:
        """Integer knobs: the values that are safe to apply on this machine (inclusive)."""
        raise TypeError(f"{self.name} is not an integer knob")

    def check(self, value: Any) -> None:
        """Raise ValueError, saying why, unless `value` is one this knob can apply here."""
        if self.kind == "bool":
            if value is not True:
                raise ValueError(f"{self.name} takes true, got {value!r}")
        elif self.kind == "int":
            low, high = self.value_range()
            if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
                raise ValueError(f"{self.name} takes an integer in {low}..{high} on this machine, got {value!r}")
        else:
            raise NotImplementedError(f"choice knob {self.name} must define check()")

    def current(self, record: Record) -> Any:
        """The value the script already runs with (None: unknown); never worth a trial."""
        return None

    @abstractmethod
    def apply(self, value: Any) -> Undo:
        """Apply the value in the observed child; returns its undo."""

    def env(self, value: Any) -> dict[str, str]:
        """Environment variables the child needs for this value (set before it starts)."""
        return {}

    @abstractmethod
    def code_change(self, value: Any, names: ScriptNames = GENERIC) -> str:
        """The code that makes the value permanent (a snippet), in the script's names."""

    def call_edit(self, value: Any) -> CallEdit | None:
        return None

    def site_edit(self, value: Any, call: dict[str, Any]) -> SiteEdit | None:
        """How to change the script's line behind `call` (an intercepted call,
        `torchdoctor.knobs.guard`) so that it keeps `value` itself; None: no edit known.
        Default: a constructor whose arguments the knob rewrote gets the knob's keywords."""
        edit = self.call_edit(value)
        if call.get("action") == "rewritten" and edit is not None:
            return SiteEdit("kwargs", edit.callees, edit.kwargs)
        return None

    def site_advice(self, value: Any, call: dict[str, Any]) -> str:
        """What to do at that line, in words."""
        edit = self.site_edit(value, call)
        where = f"{Path(call['file']).name}:{call['line']}"
        if edit is None:
            return f"{where}: `{call['code']}` undoes {self.name}={value!r}"
        if edit.action == "delete":
            return f"{where}: delete `{call['code']}` (it undoes {self.name}={value!r})"
        if edit.action == "kwargs":
            shown = ", ".join(f"{k}={v!r}" for k, v in edit.kwargs.items())
            return f"{where}: pass {shown} in `{call['code']}`"
        new = repr(edit.value) if edit.action == "assign" else ", ".join(repr(a) for a in edit.args)
        return f"{where}: change `{call['code']}` to use {new}"

    def overridden(self, value: Any, record: Record) -> str | None:
        return None


def register(cls: type[Knob]) -> type[Knob]:
    """Class decorator: instantiate the knob and add it to REGISTRY under its name."""
    knob = cls()
    if not knob.name or knob.name in REGISTRY:
        raise ValueError(f"knob {cls.__name__} has an empty or duplicate name {knob.name!r}")
    REGISTRY[knob.name] = knob
    return cls


# -- facts every knob reads from a Record --------------------------------------------------------
def environment(record: Record) -> Environment:
    """`record.env` as its typed value; an empty one when the Record's does not fit its type (a
    hand-edited Record), so that a knob reads nothing from it instead of failing."""
    return Environment.or_empty(record.env)


def step_sizes(record: Record) -> list[int]:
    """The elements of each step's first input (`env.distributed_runtime.step_elements`), zeros
    (a step that saw no input tensor) left out."""
    runtime = environment(record).distributed_runtime
    return [n for n in (runtime.step_elements or ()) if n] if runtime is not None else []


def system_summary(record: Record) -> SystemSummary:
    """`record.system.summary` as its typed value; an empty one when absent or unreadable."""
    return SystemSection.summary_of(record.system)


def cuda_capability(record: Record) -> tuple[int, int] | None:
    """Compute capability of the first GPU the Record saw, or None without CUDA."""
    gpus = environment(record).gpus
    return gpus[0].compute_capability or (0, 0) if gpus else None


def trains(record: Record) -> bool:
    """Whether the measured steps ran a backward pass."""
    return any(step.backward_s > 0 for step in record.steps) or bool(environment(record).optimizers)


def module_types(record: Record) -> dict[str, int]:
    """Module classes over every model the Record saw, with how many of each."""
    return environment(record).module_types()


def machine_cores() -> int:
    """Cores this process may run on (its CPU affinity): what bounds thread and worker counts."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def cpu_cores(record: Record) -> int:
    cpu = environment(record).cpu
    return (cpu.affinity_cores or cpu.logical_cores or 1) if cpu else 1
