"""The performance gate's decision on a step-time Verdict (`torchdoctor check`): values in, values out.

Two sides are compared: A, the reference (a git ref, another interpreter, a stored baseline), and
B, the code as it is now. The step-time decision itself comes from `torchdoctor.bench`
(interleaved rounds, paired bootstrap CI of the ratio B/A, noise floor); `time_gate` turns its
Verdict into the gate's answer:

- regression: the Verdict says "slower" (the whole CI above 1 + noise floor) and the ratio is at
  least 1 + max_slowdown;
- pass, at any look: the upper end of the look's own 95% CI (`pass_bound`) is at most
  1 + max_slowdown (a slowdown beyond the threshold is ruled out), whatever else the Verdict says;
  before the last look only when the noise floor is below max_slowdown (a check whose A against
  A differs as much as the threshold settles nothing early);
- pass, at the last look only (rounds or budget spent): the ratio is below 1 + max_slowdown; the
  CI may still reach beyond it (the reason then says how far), since no significant slowdown
  beyond the threshold was found;
- undecided: the ratio is at or beyond the threshold without being significant (the noise hides
  whether it is real), or fewer than 5 samples a side; before the last look, anything else.

So a regression is claimed only when it is significant at the confidence corrected for the looks
(false alarms are bounded by it), while a pass, whose error is a missed regression, needs only each
look's own 95% CI: a clear "no slowdown" ends at the first look as a clear slowdown does. A check
that ran out of rounds passes unless its estimate itself is beyond the threshold.

Peak memory gates the same way with `max_memory_growth` as both its threshold and floor. The
check's decision is "regression" when any gated metric regressed, else "undecided" when any is
undecided, else "pass"; "error" when a side failed or an input was refused; "saved" when a
baseline was recorded (`check.decisions`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist
from typing import Callable, Sequence

from torchdoctor.bench import SLOWER, TOO_FEW, Verdict
from torchdoctor.check.decisions import PASS, REGRESSION, UNDECIDED
from torchdoctor.check.metric import Metric


@dataclass(frozen=True, slots=True)
class GateLook:
    """The gate as one look applies it: `max_slowdown`, the threshold; `look_confidence`, the
    confidence of the Verdict's CI at this look (None: that CI decides a pass too); `confidence`,
    the check's own, the pass bound's (`pass_bound`)."""

    max_slowdown: float
    look_confidence: float | None = None
    confidence: float = 0.95


def pass_bound(verdict: Verdict, look_confidence: float | None, confidence: float = 0.95) -> float:
    """Upper end of the `confidence` CI of the ratio at this look alone, read off the Verdict's CI
    (at `look_confidence`, wider) as a normal interval on the log scale around the ratio."""
    if look_confidence is None or look_confidence <= confidence or not math.isfinite(verdict.ci_low):
        return verdict.ci_high
    z_look = NormalDist().inv_cdf(1.0 - (1.0 - look_confidence) / 2)
    z = NormalDist().inv_cdf(1.0 - (1.0 - confidence) / 2)
    se_log = (math.log(verdict.ci_high) - math.log(verdict.ci_low)) / (2.0 * z_look)
    return min(verdict.ci_high, verdict.ratio * math.exp(z * se_log))


def time_gate(verdict: Verdict, max_slowdown: float, *, final: bool = True, look_confidence: float | None = None,
              confidence: float = 0.95) -> str:
    """The gate's answer on a step-time Verdict (see the module docstring); `final`: the last look;
    `look_confidence`: the confidence of the Verdict's CI (None: use that CI for a pass too)."""
    if verdict.verdict == TOO_FEW or not math.isfinite(verdict.ci_high):
        return UNDECIDED
    if verdict.verdict == SLOWER and verdict.ratio >= 1.0 + max_slowdown:
        return REGRESSION
    # Before the last look, a pass also needs the check's own noise (the A-vs-A floor) under the
    # threshold: where A against A differs as much as the allowed slowdown, a few rounds in which A
    # happened to run slow can put a real slowdown's CI below it (seen: "+5%" changes passed at 5
    # rounds measuring -32% and -9%, floors 27% and 5.4%). More rounds then settle it.
    quiet = final or verdict.noise_floor < max_slowdown
    if quiet and pass_bound(verdict, look_confidence, confidence) <= 1.0 + max_slowdown:
        return PASS
    if final and verdict.ratio < 1.0 + max_slowdown:
        return PASS
    return UNDECIDED


def gate_settled(max_slowdown: float, look_confidence: float | None = None,
                 confidence: float = 0.95) -> Callable[[Verdict], bool]:
    """The settle test for `bench.run_interleaved` at each look: the gate has its answer already."""
    return lambda verdict: time_gate(verdict, max_slowdown, final=False, look_confidence=look_confidence,
                                     confidence=confidence) != UNDECIDED


def decide(metrics: Sequence[Metric]) -> str:
    """REGRESSION if any gated metric regressed, else UNDECIDED if any is undecided, else PASS."""
    gates = [m.gate for m in metrics if m.gate is not None]
    if REGRESSION in gates:
        return REGRESSION
    if UNDECIDED in gates or not gates:
        return UNDECIDED
    return PASS

