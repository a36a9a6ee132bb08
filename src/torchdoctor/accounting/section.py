"""The `accounting` section of a Record as frozen values (docs/record-schema.md, "accounting")."""

from __future__ import annotations

from dataclasses import MISSING, dataclass, fields
from typing import Any, ClassVar, TypeVar

from torchdoctor.jsonfields import Keyed


F = TypeVar("F", bound="Full")


@dataclass(frozen=True, slots=True)
class Full(Keyed):
    """A Keyed value whose JSON always has every key (a figure not measured is null), so the section's
    schema is the same whatever was measured."""

    @classmethod
    def full(cls: type[F], **figures: Any) -> F:
        """The value of `figures`, every other field at its default, every key written."""
        names = [f.name for f in fields(cls) if f.name != "keys"]
        defaults = {f.name: f.default for f in fields(cls) if f.default is not MISSING}
        return cls.of(**{name: figures[name] if name in figures else defaults[name] for name in names})


@dataclass(frozen=True, slots=True)
class CostCentre(Full):
    """One operator group (name, dtype, shapes) of the step: its share of the step, how near its
    speed of light it runs (`peak_fraction`: of its dtype's peak FLOP/s when it has FLOPs, else of
    the copy bandwidth; `alone_fraction`: of the same operator's speed alone on the same inputs,
    observe/probes/op_alone.py), what bounds it and whether that is expected (`verdict`, `why`)."""

    name: str
    dtype: str = "-"
    shapes: str = "-"
    seconds: float = 0.0
    share: float = 0.0
    flops_per_s: float | None = None
    peak_fraction: float | None = None
    alone_fraction: float | None = None
    bound: str = "unknown"  # "compute", "memory", "overhead" (shorter than dispatching it), "unknown"
    verdict: str = "unknown"  # "healthy", "below speed of light", "unknown"
    why: str = ""
    source: str | None = None  # 'file:line (function)' of the script that runs it

    @property
    def sol_fraction(self) -> float | None:
        """How near its nearest speed of light it runs: the larger of `peak_fraction` and
        `alone_fraction` (the operator alone is what its work can take at best, where the peak is
        out of its reach); None when neither is known."""
        known = [f for f in (self.peak_fraction, self.alone_fraction) if f is not None]
        return max(known) if known else None


@dataclass(frozen=True, slots=True)
class Slice(Full):
    """One slice of the waterfall from the ideal step to the measured one (seconds per step), the
    operator groups in it (largest first) and, once diagnosed, the findings that explain it."""

    kind: str
    label: str
    seconds: float = 0.0
    share: float = 0.0
    ops: tuple[CostCentre, ...] = ()
    explained_by: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Accounting(Full):
    """The speed-of-light accounting of one diagnosis. `step_s`: the measured step (mean of the timed
    steps, or the trace's median step); `mfu`: the model's FLOPs per step over the time they take at
    this machine's peak per dtype, over `step_s`; `slices` sum to `step_s`; `notes` say what was not
    measured and why ("peak not measured: ..."); `busy`: the machine was busy during the measurement,
    so the slices below a speed of light are not evidence of a problem in the script."""

    WHERE: ClassVar[str] = "accounting"

    source: str = "script"  # "script" (measured steps and the operator-costs probe) or "trace"
    device: str = "cpu"
    step_s: float = 0.0
    flops_per_step: float | None = None
    flops_by_dtype: dict[str, float] | None = None
    peak_flops_per_s: dict[str, float] | None = None
    peak_bytes_per_s: float | None = None
    achieved_flops_per_s: float | None = None
    mfu: float | None = None
    slices: tuple[Slice, ...] = ()
    cost_centres: tuple[CostCentre, ...] = ()
    notes: tuple[str, ...] = ()
    busy: bool = False  # other processes took the cores: every operator reads slower than it is

    @property
    def slices_sum_s(self) -> float:
        return sum(s.seconds for s in self.slices)
