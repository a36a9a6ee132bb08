"""Numerics check of a run against the baseline: does the model still compute the same thing?

The tightest comparison the script allows is used, and named in `NumericsCheck.method`:
1. Losses (training), the baseline repeated identically step by step (`--seed` makes most
   scripts deterministic): `"loss, step by step"`, difference = the largest relative difference
   of one step's loss, tolerance = the knob's `loss_rtol`.
2. Losses that differ run to run at baseline (nondeterministic kernels, a script that seeds
   itself from the clock): `"loss, window mean"`, difference = |mean(trial) - mean(baseline)| /
   |mean(baseline)| over the measured steps, tolerance = max(loss_rtol, NOISE_MARGIN x the
   baseline's own run-to-run difference): a knob cannot be asked to be more repeatable than the
   script. Knobs that change the data pipeline's random draws (`Knob.changes_data_stream`:
   DataLoader workers are seeded apart from the main process) are judged this way too, with at
   least the difference that other batches alone would make (`sampling_tolerance`).
3. No loss (inference, evaluation): the outermost module's outputs over the measured steps
   (`torchdoctor.observe.probes.outputs`). When every call saw the same inputs as the baseline's:
   `"outputs, element-wise (same inputs)"`, difference = the largest relative L2 error of a call's
   output sample, and the argmax along the last dimension must agree on at least the knob's
   `argmax_agreement` share of rows. Otherwise `"outputs, distribution statistics"`: difference =
   max(|mean shift| / std, |std ratio - 1|) of the outputs over the window, tolerance as in 2.
4. Neither: `checked=False`, said so, never passed silently.
Divergence (a non-finite loss or output, or a last-quarter mean loss above DIVERGENCE_FACTOR x
the baseline's largest loss) rejects whatever the tolerance.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any, Sequence

import torch

DIVERGENCE_FACTOR = 1.5
#: Tolerances are at least this many times the script's own run-to-run difference.
NOISE_MARGIN = 3.0

LOSS_STEPS, LOSS_MEAN = "loss, step by step", "loss, window mean"
OUTPUTS_ELEMENTWISE, OUTPUTS_DISTRIBUTION = "outputs, element-wise (same inputs)", "outputs, distribution statistics"
UNCHECKED = "none"


@dataclass(frozen=True)
class NumericsCheck:
    ok: bool
    checked: bool
    difference: float | None
    tolerance: float
    reason: str
    method: str = UNCHECKED
    argmax_agreement: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values)


def unchecked(reason: str, tolerance: float = 0.0) -> NumericsCheck:
    return NumericsCheck(True, False, None, tolerance, reason)


def losses_identical(a: Sequence[float | None], b: Sequence[float | None]) -> bool:
    """Whether two runs' losses are the same at every measured step (a deterministic script)."""
    a_values, b_values = [v for v in a if v is not None], [v for v in b if v is not None]
    return bool(a_values) and a_values == b_values


def check_losses(baseline: Sequence[float | None], trial: Sequence[float | None], tolerance: float,
                 *, step_by_step: bool = False) -> NumericsCheck:
    """Judge the trial's losses against the baseline's (see the module docstring)."""
    base = [v for v in baseline if v is not None]
    new = [v for v in trial if v is not None]
    method = LOSS_STEPS if step_by_step else LOSS_MEAN
    if not new or not base:
        return unchecked("no loss recorded: numerics not checked", tolerance)
    if any(not math.isfinite(v) for v in new):
        return NumericsCheck(False, True, math.inf, tolerance, "the loss became NaN or infinite", method)
    tail = new[-max(1, len(new) // 4):]
    if _mean(tail) > DIVERGENCE_FACTOR * max(abs(v) for v in base):
        return NumericsCheck(False, True, math.inf, tolerance,
                             f"the loss diverged: last-quarter mean {_mean(tail):.4g} vs baseline max {max(base):.4g}",
                             method)
    if step_by_step:
        pairs = list(zip(base, new))
        difference = max(abs(t - b) / max(abs(b), 1e-12) for b, t in pairs)
        what = "largest per-step loss difference"
    else:
        difference = abs(_mean(new) - _mean(base)) / max(abs(_mean(base)), 1e-12)
        what = "mean loss moved"
    if difference > tolerance:
        return NumericsCheck(False, True, difference, tolerance,
                             f"{what} {difference:.2%}, more than the {tolerance:.2%} this knob allows ({method})",
                             method)
    return NumericsCheck(True, True, difference, tolerance, f"{what} {difference:.2%} ({method})", method)


def sampling_tolerance(baseline: Sequence[float | None]) -> float:
    """The relative difference of two window means of the loss expected from different batches
    alone: NOISE_MARGIN x sqrt(2) x std / sqrt(n) / |mean| of the baseline's per-step losses. For
    knobs that change which random numbers the data pipeline draws (worker processes are seeded
    apart from the main process), so that the same seed no longer gives the same batches."""
    values = [v for v in baseline if v is not None and math.isfinite(v)]
    if len(values) < 2:
        return 0.0
    mean = _mean(values)
    std = math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1))
    return NOISE_MARGIN * math.sqrt(2.0) * std / math.sqrt(len(values)) / max(abs(mean), 1e-12)


def _same_inputs(a: dict[str, Any], b: dict[str, Any]) -> bool:
    x, y = a.get("input"), b.get("input")
    return (isinstance(x, torch.Tensor) and isinstance(y, torch.Tensor) and x.shape == y.shape
            and torch.equal(x, y) and a.get("shape") == b.get("shape"))


def distribution_difference(baseline: Sequence[dict[str, Any]], trial: Sequence[dict[str, Any]]) -> float:
    """max(|mean shift| / std, |std ratio - 1|) of the outputs over the window."""
    mb, sb = _mean([c["mean"] for c in baseline]), _mean([c["std"] for c in baseline])
    mt, st = _mean([c["mean"] for c in trial]), _mean([c["std"] for c in trial])
    scale = sb if sb > 0 and math.isfinite(sb) else max(abs(mb), 1e-12)
    return max(abs(mt - mb) / scale, abs(st / scale - 1.0) if sb > 0 else 0.0)


def check_outputs(baseline: Sequence[dict[str, Any]] | None, trial: Sequence[dict[str, Any]] | None,
                  tolerance: float, *, min_agreement: float, noise: float | None = None) -> NumericsCheck:
    """Judge the trial's model outputs against the baseline's (see the module docstring)."""
    if not baseline or not trial:
        return unchecked("no loss and no model output recorded: numerics not checked", tolerance)
    if any(not (math.isfinite(c["mean"]) and bool(torch.isfinite(c["sample"]).all())) for c in trial):
        return NumericsCheck(False, True, math.inf, tolerance, "the model's outputs became NaN or infinite",
                             OUTPUTS_ELEMENTWISE)
    count = min(len(baseline), len(trial))
    base, new = list(baseline[:count]), list(trial[:count])
    if all(_same_inputs(b, t) for b, t in zip(base, new)):
        errors, agreements = [], []
        for b, t in zip(base, new):
            reference = b["sample"].double()
            errors.append(float((t["sample"].double() - reference).norm() / max(float(reference.norm()), 1e-12)))
            if isinstance(b.get("argmax"), torch.Tensor) and isinstance(t.get("argmax"), torch.Tensor) \
                    and b["argmax"].shape == t["argmax"].shape:
                agreements.append(float((b["argmax"] == t["argmax"]).double().mean()))
        difference = max(errors)
        agreement = _mean(agreements) if agreements else None
        text = f"outputs differ by {difference:.2e} (largest relative L2 error over {count} calls)"
        if agreement is not None:
            text += f", argmax agrees on {agreement:.1%} of rows"
        if difference > tolerance:
            return NumericsCheck(False, True, difference, tolerance,
                                 f"{text}: more than the {tolerance:.2e} this knob allows ({OUTPUTS_ELEMENTWISE})",
                                 OUTPUTS_ELEMENTWISE, agreement)
        if agreement is not None and agreement < min_agreement:
            return NumericsCheck(False, True, difference, tolerance,
                                 f"{text}: fewer than the {min_agreement:.0%} this knob needs ({OUTPUTS_ELEMENTWISE})",
                                 OUTPUTS_ELEMENTWISE, agreement)
        return NumericsCheck(True, True, difference, tolerance, f"{text} ({OUTPUTS_ELEMENTWISE})",
                             OUTPUTS_ELEMENTWISE, agreement)
    tolerance = max(tolerance, NOISE_MARGIN * (noise or 0.0))
    difference = distribution_difference(base, new)
    text = f"output mean/std moved {difference:.2%} of the baseline's std over {count} calls"
    if difference > tolerance:
        return NumericsCheck(False, True, difference, tolerance,
                             f"{text}: more than the {tolerance:.2%} allowed ({OUTPUTS_DISTRIBUTION}: inputs differ)",
                             OUTPUTS_DISTRIBUTION)
    return NumericsCheck(True, True, difference, tolerance, f"{text} ({OUTPUTS_DISTRIBUTION}: inputs differ)",
                         OUTPUTS_DISTRIBUTION)
