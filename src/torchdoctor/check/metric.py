"""One compared figure of the two sides (`Metric`), as the gate, the reason and the renderers read it."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any


@dataclass(slots=True)
class Metric:
    """One figure of A and B with the ratio B/A, its CI, and (when gated) the gate's answer."""

    name: str
    label: str
    unit: str  # "s" | "samples/s" | "bytes"
    better: str  # "lower" | "higher"
    a: float | None = None
    b: float | None = None
    ratio: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    confidence: float | None = None
    pass_bound: float | None = None  # upper end of the last look's own 95% CI (what a pass needs)
    noise_floor: float | None = None
    min_detectable_effect: float | None = None
    verdict: str = "not measured"  # "worse" | "better" | "no clear difference" | "too few samples" | "not measured"
    gate: str | None = None  # PASS | REGRESSION | UNDECIDED; None: reported, not gated
    threshold: float | None = None
    n_a: int = 0
    n_b: int = 0
    note: str = ""

    @property
    def change(self) -> float | None:
        return None if self.ratio is None else self.ratio - 1.0

    def to_dict(self) -> dict[str, Any]:
        data = {k: finite(v) for k, v in asdict(self).items()}
        data["change"] = finite(self.change)
        return data


def finite(value: Any) -> Any:
    """`value`, or None for a float that is infinite or NaN (JSON has neither)."""
    return None if isinstance(value, float) and not math.isfinite(value) else value


@dataclass(frozen=True, slots=True)
class Measure:
    """What a metric measures: its JSON name, its label, its unit and which way is better."""

    name: str
    label: str
    unit: str  # "s" | "samples/s" | "bytes"
    better: str  # "lower" | "higher"

    def metric(self, **values: Any) -> Metric:
        """A metric of this measure with `values` (Metric's fields) filled in."""
        return Metric(self.name, self.label, self.unit, self.better, **values)


STEP_TIME = Measure("step_time", "step time", "s", "lower")
TIME_PER_SAMPLE = Measure("time_per_sample", "time per sample", "s", "lower")
SAMPLES_PER_S = Measure("samples_per_s", "samples/s", "samples/s", "higher")
PEAK_MEMORY = Measure("peak_memory", "peak memory", "bytes", "lower")
COMPILE_TIME = Measure("compile_time", "compile time", "s", "lower")
