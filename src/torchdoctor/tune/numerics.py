"""Numerics check of a trial against the baseline: did the model still learn the same way?

Definitions, over the losses of the measured steps (same step indices in both runs, seeds as the
script fixes them):
- `difference`: |mean(trial) - mean(baseline)| / |mean(baseline)|, the relative difference of the
  smoothed (mean) loss. Knobs that reorder float reductions (threads, workers, compile) move
  single steps a little; the mean over the window is what must stay put. Each knob states its
  tolerance (`Knob.loss_rtol`).
- divergence: a non-finite loss, or a trial whose last-quarter mean loss exceeds the baseline's
  largest loss by more than 50%. Divergence rejects whatever the tolerance.
A script that reports no loss (inference) cannot be checked this way: the result says so
(`checked=False`) instead of passing silently.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any, Sequence

DIVERGENCE_FACTOR = 1.5


@dataclass(frozen=True)
class NumericsCheck:
    ok: bool
    checked: bool
    difference: float | None
    tolerance: float
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values)


def check_losses(baseline: Sequence[float | None], trial: Sequence[float | None], tolerance: float) -> NumericsCheck:
    """Judge the trial's losses against the baseline's with a relative `tolerance` on the mean."""
    base = [v for v in baseline if v is not None]
    new = [v for v in trial if v is not None]
    if not new or not base:
        return NumericsCheck(True, False, None, tolerance, "no loss recorded: numerics not checked")
    if any(not math.isfinite(v) for v in new):
        return NumericsCheck(False, True, math.inf, tolerance, "the loss became NaN or infinite")
    tail = new[-max(1, len(new) // 4):]
    if _mean(tail) > DIVERGENCE_FACTOR * max(abs(v) for v in base):
        return NumericsCheck(False, True, math.inf, tolerance,
                             f"the loss diverged: last-quarter mean {_mean(tail):.4g} vs baseline max {max(base):.4g}")
    difference = abs(_mean(new) - _mean(base)) / max(abs(_mean(base)), 1e-12)
    if difference > tolerance:
        return NumericsCheck(False, True, difference, tolerance,
                             f"mean loss moved {difference:.2%}, more than the {tolerance:.2%} this knob allows")
    return NumericsCheck(True, True, difference, tolerance, f"mean loss within {difference:.2%}")
