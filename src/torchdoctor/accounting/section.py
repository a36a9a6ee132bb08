"""The `accounting` section of a Record as frozen values (docs/record-schema.md, "accounting")."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from torchdoctor.jsonfields import Keyed


@dataclass(frozen=True, slots=True)
class CostCentre(Keyed):
    """One operator group (name, dtype, shapes) of the step: its share of the step, how near its
    speed of light it runs (`peak_fraction`: of its dtype's peak FLOP/s when it has FLOPs, else of
    the copy bandwidth), what bounds it and whether that is expected (`verdict`, `why`)."""

    name: str
    dtype: str = "-"
    shapes: str = "-"
    seconds: float = 0.0
    share: float = 0.0
    flops_per_s: float | None = None
    peak_fraction: float | None = None
    bound: str = "unknown"  # "compute", "memory", "overhead" (shorter than dispatching it), "unknown"
    verdict: str = "unknown"  # "healthy", "below speed of light", "unknown"
    why: str = ""
    source: str | None = None  # 'file:line (function)' of the script that runs it


@dataclass(frozen=True, slots=True)
class Slice(Keyed):
    """One slice of the waterfall from the ideal step to the measured one (seconds per step), the
    operator groups in it (largest first) and, once diagnosed, the findings that explain it."""

    kind: str
    label: str
    seconds: float = 0.0
    share: float = 0.0
    ops: tuple[CostCentre, ...] = ()
    explained_by: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Accounting(Keyed):
    """The speed-of-light accounting of one diagnosis. `step_s`: the measured step (mean of the timed
    steps, or the trace's median step); `mfu`: the model's FLOPs per step over the time they take at
    this machine's peak per dtype, over `step_s`; `slices` sum to `step_s`; `notes` say what was not
    measured and why ("peak not measured: ...")."""

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

    @property
    def slices_sum_s(self) -> float:
        return sum(s.seconds for s in self.slices)
