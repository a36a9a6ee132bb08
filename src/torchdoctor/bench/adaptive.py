"""Interleaved rounds with adaptive stopping: the loop shared by statement and process benchmarks.

A round measures every variant once, in a fresh seeded random order, so that drift on the
machine (thermal, other tenants, caches) hits all variants alike; the samples are compared
paired by round (`compare_samples(..., paired=True)`: the median of per-round ratios). With
`Policy.aa_control`, the baseline is measured a second time in each round as its own slot
(`control_name`); the median per-round ratio of those two series (A-vs-A) is this session's
systematic noise, and the noise floor becomes max(min_effect, |A-vs-A ratio - 1|).

Stopping: the verdicts are looked at after the rounds in `look_schedule` (geometric, so few
looks). To keep the chance of a false claim at 1 - confidence despite repeated looks and several
variants, each look uses confidence 1 - (1 - confidence) / (looks * comparisons) (Bonferroni).
The loop stops when every comparison is settled (a win or a loss, or a CI inside
1 +- min_effect: established "no clear difference"; a wide A-vs-A floor alone never settles it),
when `max_rounds` is reached, or when another round would overrun `budget_s`. A caller may put
its own test of "settled" in place of that one (`torchdoctor check` settles a gate: a slowdown
beyond its threshold, or a CI that rules one out), and may ask for Ctrl-C to end the loop with
the rounds completed so far (stop_reason "interrupted") instead of raising.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from torchdoctor.bench.errors import BenchInputError
from torchdoctor.bench.stats import FASTER, SLOWER, UNCLEAR, Verdict, compare_samples

SCHEMA_VERSION = 1
#: A noise floor is capped here: beyond it the session is too noisy to judge anything.
_MAX_FLOOR = 0.99


@dataclass(frozen=True)
class Policy:
    """How long to measure and how strict to be. `budget_s` bounds the measuring wall time."""

    min_rounds: int = 5
    max_rounds: int = 40
    budget_s: float = 60.0
    min_effect: float = 0.02
    confidence: float = 0.95
    aa_control: bool = True
    seed: int = 0

    def __post_init__(self) -> None:
        if not 1 <= self.min_rounds <= self.max_rounds:
            raise BenchInputError(
                f"need 1 <= min_rounds <= max_rounds, got {self.min_rounds} and {self.max_rounds}"
            )
        if self.budget_s <= 0:
            raise BenchInputError(f"budget_s must be positive, got {self.budget_s}")


@dataclass(frozen=True)
class RoundInfo:
    """Progress after one round, for progress bars."""

    rounds_done: int
    max_rounds: int
    elapsed_s: float
    budget_s: float


@dataclass(frozen=True)
class BenchResult:
    """One interleaved benchmark: per-round samples and each variant's verdict vs the baseline."""

    label: str
    baseline: str
    samples_s: dict[str, list[float]]
    verdicts: dict[str, Verdict]
    aa_ratio: float | None
    noise_floor: float
    rounds: int
    wall_s: float
    stop_reason: str  # "settled" | "max_rounds" | "budget" | "interrupted" (only with stop_on_interrupt)
    look_confidence: float
    warnings: list[str] = field(default_factory=list)

    def median_s(self, name: str) -> float:
        return float(np.median(self.samples_s[name]))

    def to_dict(self) -> dict:
        """JSON-ready dict (keys documented in docs/bench.md)."""
        return {
            "label": self.label,
            "baseline": self.baseline,
            "median_s": {name: self.median_s(name) for name in self.samples_s},
            "samples_s": self.samples_s,
            "verdicts": {name: v.to_dict() for name, v in self.verdicts.items()},
            "aa_ratio": self.aa_ratio,
            "noise_floor": self.noise_floor,
            "rounds": self.rounds,
            "wall_s": self.wall_s,
            "stop_reason": self.stop_reason,
            "look_confidence": self.look_confidence,
            "warnings": self.warnings,
        }


def control_name(baseline: str) -> str:
    """Name of the baseline's second (A-vs-A) slot."""
    return f"{baseline} (again)"


def look_schedule(policy: Policy) -> list[int]:
    """Rounds after which verdicts are looked at: min_rounds, then x1.5 each, then max_rounds."""
    looks = [policy.min_rounds]
    while looks[-1] < policy.max_rounds:
        looks.append(min(policy.max_rounds, max(looks[-1] + 1, math.ceil(looks[-1] * 1.5))))
    return looks


def run_interleaved(
    measure: Callable[[str], float],
    names: Sequence[str],
    *,
    policy: Policy,
    label: str = "",
    on_round: Callable[[RoundInfo], None] | None = None,
    settled: Callable[[Verdict], bool] | None = None,
    stop_on_interrupt: bool = False,
) -> BenchResult:
    """Measure `names` (the first is the baseline) in interleaved rounds until settled.

    `measure(name)` returns one sample in seconds for that variant (a round's median for
    statements, one wall time for processes); it raises to abort the whole benchmark.
    `settled(verdict)`: whether a comparison needs no more rounds (default: `is_settled`).
    `stop_on_interrupt`: a KeyboardInterrupt ends the loop; the verdicts are those of the rounds
    completed before it (a round cut short is dropped, to keep the samples paired).
    """
    if len(names) < 2 or len(set(names)) != len(names):
        raise BenchInputError(f"need at least two variants with distinct names, got {list(names)}")
    baseline = names[0]
    slots = list(names) + ([control_name(baseline)] if policy.aa_control else [])
    samples: dict[str, list[float]] = {slot: [] for slot in slots}
    looks = set(look_schedule(policy))
    look_conf = 1.0 - (1.0 - policy.confidence) / (len(looks) * (len(names) - 1))
    rng = np.random.default_rng(policy.seed)
    start = time.perf_counter()
    stop_reason = "max_rounds"
    done = 0
    try:
        for done in range(1, policy.max_rounds + 1):
            for slot in rng.permutation(slots):
                samples[str(slot)].append(measure(baseline if slot not in names else str(slot)))
            elapsed = time.perf_counter() - start
            if on_round is not None:
                on_round(RoundInfo(done, policy.max_rounds, elapsed, policy.budget_s))
            if done in looks and _judge(samples, names, policy, look_conf, settled)[0]:
                stop_reason = "settled"
                break
            if done < policy.max_rounds and elapsed * (done + 1) / done > policy.budget_s:
                stop_reason = "budget"
                break
    except KeyboardInterrupt:
        if not stop_on_interrupt:
            raise
        done = min(len(v) for v in samples.values())
        samples = {slot: values[:done] for slot, values in samples.items()}
        stop_reason = "interrupted"
    is_done, verdicts, aa_ratio, floor = _judge(samples, names, policy, look_conf, settled)
    warnings = [] if done >= policy.min_rounds or stop_reason == "interrupted" else [
        f"budget of {policy.budget_s:g} s allowed only {done} round(s) of the {policy.min_rounds} "
        "wanted; raise the budget for a verdict"
    ]
    return BenchResult(
        label, baseline, samples, verdicts, aa_ratio, floor, done, time.perf_counter() - start,
        "settled" if is_done and stop_reason != "interrupted" else stop_reason, look_conf, warnings,
    )


def _judge(
    samples: dict[str, list[float]], names: Sequence[str], policy: Policy, confidence: float,
    settled: Callable[[Verdict], bool] | None = None,
) -> tuple[bool, dict[str, Verdict], float | None, float]:
    """Verdict of every variant against the baseline, with the session's noise floor."""
    baseline = samples[names[0]]
    aa_ratio, floor = None, policy.min_effect
    control = samples.get(control_name(names[0]))
    if control:
        aa_ratio = float(np.median(np.divide(control, baseline)))
        floor = min(max(floor, abs(aa_ratio - 1.0)), _MAX_FLOOR)
    verdicts = {
        name: compare_samples(
            baseline, samples[name], min_effect=floor, confidence=confidence, seed=policy.seed,
            paired=True,
        )
        for name in names[1:]
    }
    if settled is None:
        done = all(is_settled(v, policy.min_effect) for v in verdicts.values())
    else:
        done = all(settled(v) for v in verdicts.values())
    return done, verdicts, aa_ratio, floor


def is_settled(verdict: Verdict, min_effect: float) -> bool:
    """True when more rounds would not change the answer: a win, a loss, or a CI wholly inside
    1 +- min_effect (the caller's band, not an A-vs-A floor that may itself be noise)."""
    if verdict.verdict in (FASTER, SLOWER):
        return True
    inside = 1.0 - min_effect <= verdict.ci_low and verdict.ci_high <= 1.0 + min_effect
    return verdict.verdict == UNCLEAR and inside
