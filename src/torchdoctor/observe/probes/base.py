"""The probe registry: a probe measures one thing inside the observed process, after the timing
windows, and leaves one JSON object in the Record's `probes` under its name.

A probe is a function of this package decorated with :func:`probe`, found by module scan
(:func:`all_probes`), so adding a probe is adding a module. The decorator states what is fixed per
probe: its name, its phase and its order in the phase, whether it applies to this observation
(`applies`, from the settings and the process: cheap, asked before anything is measured for it),
and what it needs beyond the :class:`ProbeContext` every probe gets (`needs`: the profiled
operators, read from the profiler only for a probe that needs them and applies). The function
itself reads the context's figures and decides whether there is anything to measure:

- a WINDOWS_END probe measures at once, when the windows end (before the memory step), and
  returns its value, or None where it measured nothing;
- an AFTER_WINDOWS probe measures the script's own next steps, after the memory step and the
  probes before it: it returns a :class:`StepProbe` the runner drives (observe/probes/runner.py),
  or None.

A probe's value is read back through its key in torchdoctor.probe_values.
"""

from __future__ import annotations

import enum
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Protocol

from torchdoctor.discovery import import_submodules

if TYPE_CHECKING:
    from torchdoctor.observe.config import ObserveConfig
    from torchdoctor.observe.facts import Facts
    from torchdoctor.observe.hooks import Instrumentation
    from torchdoctor.observe.probes.profiled_ops import ProfiledOps
    from torchdoctor.observe.steps import StepClock
    from torchdoctor.observe.system import SystemSampler


class Phase(enum.Enum):
    """When a probe runs; the phases run in this order."""

    WINDOWS_END = 1  # measures on its own, as the windows end: returns its value
    AFTER_WINDOWS = 2  # measures the script's own steps after the windows: returns a StepProbe


#: What a probe may declare it needs, besides the context's figures.
PROFILED_OPS = "profiled_ops"
NEEDS = frozenset({PROFILED_OPS})


class StepProbe(Protocol):
    """A probe measuring the script's steps (observe/probes/blocks.py's BlockProbe is one)."""

    label: str  # what the progress bar shows meanwhile

    @property
    def progress(self) -> tuple[int, int]:
        """(steps ended, steps in all) since `begin()`."""
        ...

    def begin(self) -> None:
        """Start measuring, on a step boundary."""

    def step_end(self) -> bool:
        """A step ended; True when the probe is done and the script's own settings are back."""
        ...

    def close(self, reason: str | None) -> None:
        """Restore the script's settings now; with `reason`, the probe was cut short."""

    def to_dict(self) -> Any:
        """Its value for `Record.probes` (a JSON object); None if it never began."""
        ...


@dataclass
class ProbeContext:
    """What a probe reads: the observation's settings, the script's facts, the step clock (its timed
    steps), the hooks (the script's outermost module, its loaders), the system sampler; and what
    the session learns as the windows end: `profiled_ops` (for a probe that needs them) and
    `script_compiles` (the script itself called torch.compile)."""

    config: ObserveConfig
    facts: Facts
    clock: StepClock
    hooks: Instrumentation
    sampler: SystemSampler
    profiled_ops: ProfiledOps | None = None
    script_compiles: bool = False

    def may_probe(self) -> bool:
        """Probes run on `diagnose` and tune's first baseline: not with a trial's knobs (they hold the
        settings the probes would switch; tune measures them itself), nor with several ranks (they wait
        on each other)."""
        return self.config.threads_probe and not self.config.knobs and int(os.environ.get("WORLD_SIZE", "1")) <= 1


@dataclass(frozen=True)
class Probe:
    """A registered probe: its fixed data and the function that measures (see the module docstring)."""

    name: str
    phase: Phase
    order: int
    applies: Callable[[ProbeContext], bool]
    start: Callable[[ProbeContext], Any]
    needs: frozenset[str] = frozenset()


REGISTRY: dict[str, Probe] = {}


def probe(name: str, phase: Phase, *, order: int, applies: Callable[[ProbeContext], bool],
          needs: frozenset[str] = frozenset()) -> Callable[[Callable[[ProbeContext], Any]], Callable[[ProbeContext], Any]]:
    """Register the decorated function as probe `name`; names must be unique, needs among NEEDS."""
    if not needs <= NEEDS:
        raise ValueError(f"probe {name}: unknown needs {sorted(needs - NEEDS)}")

    def register(start: Callable[[ProbeContext], Any]) -> Callable[[ProbeContext], Any]:
        if name in REGISTRY and REGISTRY[name].start.__qualname__ != start.__qualname__:
            raise ValueError(f"probe {name} registered twice")
        REGISTRY[name] = Probe(name, phase, order, applies, start, needs)
        return start

    return register


def all_probes() -> tuple[Probe, ...]:
    """Every probe, in the order they run: by phase, then order, then name (importing this package's
    modules fills the registry)."""
    import_submodules(__package__)
    return tuple(sorted(REGISTRY.values(), key=lambda p: (p.phase.value, p.order, p.name)))
