"""The decision "is B faster than A": bootstrap CI of the ratio of medians against a noise floor.

Definitions (all times in seconds, B judged relative to A):
- ratio: median(B) / median(A); below 1 means B is faster.
- CI: percentile bootstrap interval of that ratio, A and B resampled independently
  (`N_BOOT` resamples, numpy, seeded), at the caller's confidence.
- paired (samples taken in rounds, A_i and B_i in the same round): ratio is instead
  median_i(B_i / A_i) and the bootstrap resamples rounds. Machine states that last longer than a
  round (another tenant taking a core) then cancel within each round instead of widening the CI.
- noise floor: the relative effect below which no win or loss is claimed, whatever the CI says
  (a minimum effect the caller sets, or the A-vs-A difference measured in the same session).
- verdict: "faster" if the whole CI lies below 1 - floor, "slower" if it lies above 1 + floor,
  otherwise "no clear difference"; with fewer than `MIN_SAMPLES` on either side, always
  "no clear difference (too few samples)".
- minimum detectable effect: the relative slowdown that this run's noise would reveal 80% of the
  time, i.e. (1 + floor) * exp((z_conf + z_0.8) * se) - 1, with se the standard error of
  log(ratio) read off the CI width.

Why by hand: scipy.stats.bootstrap does the resampling but not the decision (floor, verdict,
detectable effect), and scipy would be a heavy dependency for a dozen lines of numpy.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from statistics import NormalDist

import numpy as np

from torchdoctor.bench.errors import BenchInputError
from torchdoctor.bench.periodic import bootstrap_blocks

FASTER = "faster"
SLOWER = "slower"
UNCLEAR = "no clear difference"
TOO_FEW = "no clear difference (too few samples)"

#: Fewer samples than this on either side give no verdict: a median of 4 is not a statistic.
MIN_SAMPLES = 5
#: Bootstrap resamples; enough for the 0.25% tails of the strictest per-look confidence.
N_BOOT = 4000
#: Power at which the minimum detectable effect is stated.
MDE_POWER = 0.8
#: Upper bound on resample-matrix cells held at once (memory for long per-step series).
_MAX_CELLS = 4_000_000


@dataclass(frozen=True)
class Verdict:
    """The outcome of one A-vs-B comparison of times; see the module docstring for definitions."""

    verdict: str
    ratio: float
    ci_low: float
    ci_high: float
    noise_floor: float
    min_detectable_effect: float
    n_a: int
    n_b: int

    def to_dict(self) -> dict:
        """JSON-ready dict; NaN (no estimate) becomes None."""
        return {k: _finite_or_none(v) for k, v in asdict(self).items()}


def compare_samples(
    a_s: Sequence[float],
    b_s: Sequence[float],
    *,
    min_effect: float = 0.02,
    confidence: float = 0.95,
    seed: int = 0,
    paired: bool = False,
) -> Verdict:
    """Judge times `b_s` against times `a_s` (seconds, or any positive unit shared by both).

    `min_effect` is the noise floor (relative, e.g. 0.02 = 2%); `confidence` the CI's level;
    `paired`: a_s[i] and b_s[i] were measured in the same round (equal lengths required).
    Raises BenchInputError on non-finite or non-positive times or nonsensical options.
    """
    a, b = _as_times(a_s, "A"), _as_times(b_s, "B")
    _check_options(a, b, min_effect, confidence, paired)
    if paired:
        ratio = float(np.median(b / a)) if a.size else math.nan
    else:
        ratio = float(np.median(b) / np.median(a)) if a.size and b.size else math.nan
    if min(a.size, b.size) < MIN_SAMPLES:
        return Verdict(TOO_FEW, ratio, math.nan, math.nan, min_effect, math.nan, a.size, b.size)
    rng = np.random.default_rng(seed)
    if paired:
        ratios = _bootstrap_medians(b / a, rng)
    else:
        ratios = _bootstrap_medians(b, rng) / _bootstrap_medians(a, rng)
    alpha = 1.0 - confidence
    low, high = (float(q) for q in np.quantile(ratios, [alpha / 2, 1 - alpha / 2]))
    mde = min_detectable_effect(low, high, noise_floor=min_effect, confidence=confidence)
    return Verdict(_decide(low, high, min_effect), ratio, low, high, min_effect, mde, a.size, b.size)


def min_detectable_effect(
    ci_low: float, ci_high: float, *, noise_floor: float, confidence: float
) -> float:
    """Relative slowdown detected with probability `MDE_POWER` given a CI of this width."""
    z_conf = NormalDist().inv_cdf(1.0 - (1.0 - confidence) / 2)
    se_log = (math.log(ci_high) - math.log(ci_low)) / (2.0 * z_conf)
    z_power = NormalDist().inv_cdf(MDE_POWER)
    return (1.0 + noise_floor) * math.exp((z_conf + z_power) * se_log) - 1.0


def _check_options(a: np.ndarray, b: np.ndarray, min_effect: float, confidence: float, paired: bool) -> None:
    if not 0.0 <= min_effect < 1.0:
        raise BenchInputError(f"min_effect must be in [0, 1), got {min_effect}")
    if not 0.5 <= confidence < 1.0:
        raise BenchInputError(f"confidence must be in [0.5, 1), got {confidence}")
    if paired and a.size != b.size:
        raise BenchInputError(f"paired samples need equal lengths, got {a.size} and {b.size}")


def _decide(ci_low: float, ci_high: float, floor: float) -> str:
    if ci_high < 1.0 - floor:
        return FASTER
    if ci_low > 1.0 + floor:
        return SLOWER
    return UNCLEAR


def _bootstrap_medians(x: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Medians of `N_BOOT` resamples (with replacement) of `x`: samples that are independent
    draws (a statement's timings), so no cycles are looked for."""
    return bootstrap_blocks(x, rng, np.median, N_BOOT, _MAX_CELLS, period=1)


def _as_times(values: Sequence[float], side: str) -> np.ndarray:
    arr = np.asarray(values, dtype=float).ravel()
    if arr.size and not (np.all(np.isfinite(arr)) and np.all(arr > 0)):
        raise BenchInputError(
            f"times of {side} must be finite and positive; got {arr[~(np.isfinite(arr) & (arr > 0))][:3]}"
        )
    return arr


def _finite_pair(pair: tuple[float, float] | None) -> list[float] | None:
    return list(pair) if pair is not None and all(math.isfinite(v) for v in pair) else None


def _finite_or_none(value: object) -> object:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


# -- rounds of runs ---------------------------------------------------------------------------
#: Relative difference between two runs of one configuration beyond which they disagree: one of
#: them was disturbed (another process took the cores) and must not be divided by.
RUN_TOLERANCE = 0.15
#: The normal quantile of a two-sided 95% interval.
Z_95 = NormalDist().inv_cdf(0.975)
#: Standard error of a median over that of a mean, for normal data (sqrt(pi / 2)).
MEDIAN_SE_FACTOR = math.sqrt(math.pi / 2)
#: Rounds (runs a side, unpaired) from which the scatter of the runs' means alone is the ratio's
#: uncertainty (`RunsVerdict.half_width`). The bootstrap of a run's steps treats them as independent
#: draws, and a script's steps are not: a DataLoader whose workers restart every 4 batches makes
#: every fourth step a 1 s wait, so a 20-step run holds exactly five of them, its mean steady to 1%
#: run after run, while resampled steps hold anywhere from one to ten (a tune_zoo confirmation
#: printed "+-35%" where its 11 rounds' ratios scattered +-6% and a re-measurement landed 6% away:
#: benchmarks/results/2026-12-04-tune-zoo.md, run 30). Periodic logging, gradient accumulation and
#: prefetch bursts do the same; correlated steps (a slow minute) do the opposite. How the runs'
#: means actually differ counts all of that, once there are enough of them.
#: Before that the bootstrap resamples a periodic run in whole cycles (`bench.periodic`), which
#: covers the cycles a run holds at least three of, not the rest.
SCATTER_ROUNDS = 6
#: Runs a side needs before complete separation decides for runs that disagree among themselves:
#: with 3 + 3 interleaved runs, every B run faster than every A run happens by chance with
#: probability 1 / C(6, 3) = 5% when nothing changed.
SEPARATION_RUNS = 3


@dataclass(frozen=True)
class RunsVerdict:
    """A verdict on whole runs (each a series of step times) of A and B measured in interleaved
    rounds. `a_means`/`b_means`: each run's mean step time (its timed window's wall time per step).
    `a_kept`/`b_kept`: indices of the runs that agree with each other (the largest group
    of runs within the run tolerance of its fastest member); the others count as disturbed (the
    median over runs outweighs them once there are three). `spread`: the largest relative
    difference between kept runs of one side, the run-to-run noise, which is also the verdict's
    noise floor when above `min_effect`.
    `corroborated`: on every side with two runs or more, a majority of them (and at least two)
    agree, so the verdict rests on no single run and the spread is the noise of most runs.
    `separated`: decided by the runs' ranks (`_rank_interval`), where the runs did not corroborate
    each other or where their spread, as the noise floor, hid the effect.
    `paired`: a_means[i] and b_means[i] were measured in one round, and the ratio and its
    uncertainty are the rounds' (`compare_runs`)."""

    verdict: Verdict
    a_means: list[float]
    b_means: list[float]
    a_kept: list[int]
    b_kept: list[int]
    spread: float
    corroborated: bool
    separated: bool = False
    paired: bool = False

    @property
    def decided(self) -> bool:
        """Whether the verdict may be acted on: the runs of each side corroborate each other, or,
        where they do not, every run of one side beat every run of the other (`separated`)."""
        return self.corroborated or self.separated

    @property
    def disturbed(self) -> int:
        return len(self.a_means) - len(self.a_kept) + len(self.b_means) - len(self.b_kept)

    @property
    def run_to_run(self) -> float:
        """The ratio's relative 95% uncertainty from how runs differ: what another measurement of
        the same two configurations sees. The median of n runs whose log means scatter with sd s
        has a standard error of about 1.25 s / sqrt(n) (asymptotic efficiency of the median), s
        from each side's agreeing runs; paired, s is the scatter of the log ratios of the rounds
        whose two runs agree with their sides (what the machine's moves leave of them); in either
        case at least the robust scatter of all of them (`_robust_variance`), as the median is
        taken over all. As s is itself estimated from the n runs, the quantile is Student's t
        with n - 1 degrees of freedom (`t_quantile_95`), not the normal's: with 6 rounds 2.57,
        not 1.96. Paired with fewer than two rounds whose runs both agree with their sides, the
        robust scatter of every round alone, from 3 rounds: a machine that moves between two states
        splits each side's runs into two groups, so that few rounds have both runs in the larger
        ones, while the rounds' ratios stay steady (`tests/bench/test_runs.py` rebuilds such a
        confirmation). Infinite while unknown (fewer than two such runs or rounds)."""
        if self.paired:  # the rounds' log ratios, those of rounds with a disturbed run left out, as below
            every = np.log(np.divide(self.b_means, self.a_means))
            steady = [i for i in self.a_kept if i in self.b_kept]
            if len(steady) >= 2:
                scatter, count = _scatter(np.log([self.b_means[i] / self.a_means[i] for i in steady]), every)
            elif len(every) >= 3:
                scatter, count = _robust_variance(every), len(every)
            else:
                return math.inf
            variance = scatter / len(self.a_means)
        elif len(self.a_kept) < 2 or len(self.b_kept) < 2:
            return math.inf
        else:
            sides = [_scatter(np.log([means[i] for i in kept]), np.log(means))
                     for means, kept in ((self.a_means, self.a_kept), (self.b_means, self.b_kept))]
            variance = sum(scatter / len(means) for (scatter, _), means in zip(sides, (self.a_means, self.b_means)))
            count = min(count for _, count in sides)
        return math.expm1(t_quantile_95(count - 1) * MEDIAN_SE_FACTOR * math.sqrt(variance))

    @property
    def lagging_rounds(self) -> list[int]:
        """Paired rounds in which B gained far less than in the median round: B's run slower,
        relative to its A, than the median round's by more than three robust standard deviations
        of the rounds' log ratios and by more than RUN_TOLERANCE. The median outweighs them,
        and rightly for the figure; but they say the effect depends on the machine's state (two
        intra-op threads gain only while the second core is free: on a shared 2-core machine 2 of
        11 rounds of the zoo's grad-inference confirmation gained x0.98 and x1.08 against a median of
        x1.40, and a re-measurement minutes later, with more of its rounds like those, x1.10).
        Empty when unpaired or with fewer than SEPARATION_RUNS + 2 rounds (no scale to judge by)."""
        if not self.paired or len(self.a_means) < SEPARATION_RUNS + 2:
            return []
        logs = np.log(np.divide(self.b_means, self.a_means))
        centre = float(np.median(logs))
        limit = max(3.0 * math.sqrt(_robust_variance(logs)), math.log1p(RUN_TOLERANCE))
        return [i for i, value in enumerate(logs) if value - centre > limit]

    @property
    def from_scatter(self) -> bool:
        """Whether the ratio's uncertainty is the scatter of the runs' means alone: from
        SCATTER_ROUNDS rounds (runs a side) on, where that scatter is known; a verdict decided by
        the runs' ranks keeps its rank interval."""
        rounds = min(len(self.a_means), len(self.b_means))
        return (not self.separated and rounds >= SCATTER_ROUNDS and math.isfinite(self.verdict.ratio)
                and math.isfinite(self.run_to_run))

    @property
    def half_width(self) -> float:
        """The ratio's relative 95% uncertainty: `run_to_run` where it is known from enough rounds
        (`from_scatter`), else the larger of it and half the bootstrap CI (the noise of the steps
        within runs, taken as independent: see SCATTER_ROUNDS). Infinite while either is unknown."""
        if self.from_scatter:
            return self.run_to_run
        ci_low, ci_high = self._interval_95
        if not (ci_low > 0 and ci_high > 0):
            return math.inf
        return max(math.sqrt(ci_high / ci_low) - 1.0, self.run_to_run)

    @property
    def ci_across_runs(self) -> tuple[float, float] | None:
        """The ratio's 95% CI with the run-to-run scatter in: the bootstrap CI, which sees only
        the steps within each run (and so can be far narrower than the rounds' scatter), widened to
        ratio / (1 + `run_to_run`) .. ratio * (1 + `run_to_run`). A verdict decided by the runs'
        ranks starts from their 95% interval (`_interval_95`), widened alike: that interval assumes
        both sides scatter alike, and beside a nearly constant baseline (1 s sleeps) it is that of
        the median of the other side's runs at about 80% coverage. None while the run-to-run part
        is unknown, but for a rank interval, then as it is. From enough rounds (`from_scatter`) the
        run-to-run interval alone: the bootstrap's can be far too wide. The measurements behind
        this: docs/bench.md."""
        (ci_low, ci_high), ratio = self._interval_95, self.verdict.ratio
        runs = self.run_to_run
        if self.from_scatter:
            return ratio / (1.0 + runs), ratio * (1.0 + runs)
        if not (ci_low > 0 and ci_high > 0):
            return None
        if not math.isfinite(runs):
            return (ci_low, ci_high) if self.separated else None
        return min(ci_low, ratio / (1.0 + runs)), max(ci_high, ratio * (1.0 + runs))

    @property
    def _interval_95(self) -> tuple[float, float]:
        """The two-sided 95% interval the uncertainty starts from: the bootstrap CI, or, decided by
        the runs' ranks, their interval at 2.5% a side. The verdict's own rank interval is the
        one-sided 5% test's, a 90% interval, which was printed among 95% ones; with 3 runs a side
        both are the range of the run ratios (no narrower set of pairs reaches 95%)."""
        if self.separated:
            return _rank_interval(self.a_means, self.b_means, alpha=0.025)
        return self.verdict.ci_low, self.verdict.ci_high

    def to_dict(self) -> dict:
        return {**self.verdict.to_dict(), "a_run_means": self.a_means, "b_run_means": self.b_means,
                "a_kept": self.a_kept, "b_kept": self.b_kept, "spread": self.spread,
                "corroborated": self.corroborated, "separated": self.separated, "decided": self.decided,
                "paired": self.paired, "ci_across_runs": _finite_pair(self.ci_across_runs),
                "from_scatter": self.from_scatter}


def t_quantile_95(df: int) -> float:
    """Student's t 97.5% quantile (a two-sided 95% interval) for `df` degrees of freedom: exact
    for 1 and 2 (closed forms), else the Cornish-Fisher expansion around the normal's (Abramowitz
    & Stegun 26.7.5, four terms: within 1% of the exact value from 3 on); by hand because scipy
    is not a dependency. Infinite below 1."""
    if df < 1:
        return math.inf
    if df == 1:
        return math.tan(math.pi * 0.475)
    if df == 2:
        return 0.95 / math.sqrt(2 * 0.975 * 0.025)
    z = Z_95
    return (z + (z**3 + z) / (4 * df) + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * df**2)
            + (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / (384 * df**3))


def _scatter(agreeing: np.ndarray, every: np.ndarray) -> tuple[float, int]:
    """The variance of the log means (or log ratios) the median is taken over, the larger of the
    agreeing ones' sample variance and the robust variance of all of them, with the count it
    was estimated from (its degrees of freedom plus one)."""
    sample, robust = float(np.var(agreeing, ddof=1)), _robust_variance(every)
    return (sample, len(agreeing)) if sample >= robust else (robust, len(every))


def _robust_variance(logs: np.ndarray) -> float:
    """The variance of normal logs with the scatter of `logs` (1.4826 x their MAD, squared): the
    scatter of every run, or round, the median is taken over, which the variance of the agreeing
    ones alone understates where many fall outside the run tolerance (a tune_zoo confirmation: 8 of
    16 rounds agreed, +-2.3% from them, +-6.8% from all 16; benchmarks/results/2026-12-04-tune-zoo.md,
    run 30), and one disturbed run moves it little. 0 for
    fewer than 3 values (a MAD of two is no scale)."""
    if len(logs) < 3:
        return 0.0
    return float((1.4826 * np.median(np.abs(logs - np.median(logs)))) ** 2)


def agreeing_runs(times: Sequence[float], tolerance: float = RUN_TOLERANCE) -> list[int]:
    """Indices of the largest group of runs whose step times lie within `tolerance` of the
    group's fastest (ties: the faster group). A disturbance only ever slows a run, so a run far
    slower than a group that agrees is the disturbed one."""
    best: list[int] = []
    for anchor in sorted(range(len(times)), key=lambda i: times[i]):
        group = [i for i, m in enumerate(times) if times[anchor] <= m <= times[anchor] * (1 + tolerance)]
        if len(group) > len(best):
            best = group
    return sorted(best)


def _corroborated(agreeing: int, runs: int) -> bool:
    """One run stands for itself; of two or more, a majority (and at least two) must agree, so
    that a disturbance is the exception the median outweighs, not a pair picked out of noise."""
    return runs == 1 or (agreeing >= 2 and agreeing > runs / 2)


def geometric_median(values: Sequence[float | None]) -> float | None:
    """The median of positive `values` on a log scale (None and 0 left out; None when none is left):
    `compare_runs`' statistic over runs, which tune and `torchdoctor compile` report beside its ratio."""
    present = [v for v in values if v]
    return float(np.exp(np.median(np.log(present)))) if present else None


def compare_runs(
    a_runs: Sequence[Sequence[float]],
    b_runs: Sequence[Sequence[float]],
    *,
    min_effect: float = 0.02,
    tolerance: float = RUN_TOLERANCE,
    confidence: float = 0.95,
    seed: int = 0,
    paired: bool = False,
) -> RunsVerdict:
    """Judge B against A from whole runs (each a list of step times) measured interleaved.

    Statistic: the ratio of the medians of the runs' mean step times (geometric median: the
    median of their logarithms), so that one disturbed run of three moves nothing. A run's mean
    step is its window's wall time per step, the pace a user's epoch takes; its median step is
    not: DataLoader workers deliver in bursts (16 workers finish 16 batches together, the next 15
    steps find their batch ready), and a worker restart every few steps is one slow step of
    several, so the median step misses exactly the waits a data fix removes. Disturbances longer
    than a step are the run-level median's business. Every run counts: keeping only the runs that
    agree would favour a configuration whose runs vary (a DataLoader worker starved of a core now
    and then), as its slow runs would be dropped. CI: bootstrap of each run's steps
    (`_bootstrap_log_means`). Noise floor: max(min_effect, the
    spread of the agreeing runs of either side): no effect within the run-to-run noise is claimed.
    Runs that do not corroborate each other are judged by their ranks once each side has
    SEPARATION_RUNS runs (`_rank_interval`): an exact one-sided 5% rank test over the runs' means
    and its distribution-free interval of the run ratio, so that a configuration whose own runs vary
    is still decided. With 3 + 3 runs the test is complete separation: faster only
    when every B run beat every A run by more than min_effect, the interval the range of run ratios.

    `paired`: a_runs[i] and b_runs[i] ran in one round, one right after the other (A B B A ...;
    equal counts). The ratio is then the rounds' geometric median ratio, median_i(B_i / A_i) on a
    log scale, and the CI the median of the rounds' log ratios of runs bootstrapped as above: a
    machine state that lasts a round (another tenant on the second core for a minute) slows both
    runs of the round and cancels, where the ratio of the two sides' medians can take A's median
    from a slow minute and B's from a fast one. The agreement of runs, the noise floor and the
    ranks stay each side's. The measurements behind each of these choices: docs/bench.md, and
    "Notes behind bench.stats" in benchmarks/results/2026-12-04-tune-zoo.md.
    """
    if not 0.5 <= confidence < 1.0:
        raise BenchInputError(f"confidence must be in [0.5, 1), got {confidence}")
    a = [_as_times(r, "A") for r in a_runs]
    b = [_as_times(r, "B") for r in b_runs]
    if paired:
        if len(a) != len(b):
            raise BenchInputError(f"paired runs need equal counts, got {len(a)} and {len(b)}")
        rounds = [(x, y) for x, y in zip(a, b) if x.size and y.size]  # a round with an empty run has no ratio
        a, b = [x for x, _ in rounds], [y for _, y in rounds]
    else:
        a, b = [r for r in a if r.size], [r for r in b if r.size]
    a_mean = [float(np.mean(r)) for r in a]
    b_mean = [float(np.mean(r)) for r in b]
    a_kept, b_kept = agreeing_runs(a_mean, tolerance), agreeing_runs(b_mean, tolerance)
    spread = 0.0
    for means, kept in ((a_mean, a_kept), (b_mean, b_kept)):
        if len(kept) > 1:
            values = [means[i] for i in kept]
            spread = max(spread, max(values) / min(values) - 1.0)
    corroborated = bool(a and b) and all(_corroborated(len(kept), len(runs))
                                         for runs, kept in ((a, a_kept), (b, b_kept)))
    floor = min(max(min_effect, spread), 0.99)
    if not a or not b:
        return RunsVerdict(Verdict(TOO_FEW, math.nan, math.nan, math.nan, floor, math.nan, 0, 0),
                           a_mean, b_mean, a_kept, b_kept, spread, False, paired=paired)
    n_a, n_b = sum(r.size for r in a), sum(r.size for r in b)
    if paired:
        ratio = geometric_median([y / x for x, y in zip(a_mean, b_mean)])
    else:
        ratio = geometric_median(b_mean) / geometric_median(a_mean)  # type: ignore[operator]  # both non-empty
    if min(n_a, n_b) < MIN_SAMPLES:
        return RunsVerdict(Verdict(TOO_FEW, ratio, math.nan, math.nan, floor, math.nan, n_a, n_b),
                           a_mean, b_mean, a_kept, b_kept, spread, corroborated, paired=paired)
    ranks_decide = min(len(a), len(b)) >= SEPARATION_RUNS
    if not corroborated and ranks_decide:
        # Runs too noisy to corroborate each other: decide by their ranks alone, the interval as
        # wide as the noise makes it.
        decision, low, high = _by_ranks(a_mean, b_mean, min_effect)
        verdict = Verdict(decision, ratio, low, high, floor, math.nan, n_a, n_b)
        return RunsVerdict(verdict, a_mean, b_mean, a_kept, b_kept, spread, False, separated=decision != UNCLEAR,
                           paired=paired)
    rng = np.random.default_rng(seed)
    b_logs = _bootstrap_log_means(b, rng)  # B's resamples drawn first, as ever: a seed gives the same CI
    a_logs = _bootstrap_log_means(a, rng)
    if paired:
        log_ratio = np.median(b_logs - a_logs, axis=0)
    else:
        log_ratio = np.median(b_logs, axis=0) - np.median(a_logs, axis=0)
    alpha = 1.0 - confidence
    low, high = (float(math.exp(q)) for q in np.quantile(log_ratio, [alpha / 2, 1 - alpha / 2]))
    mde = min_detectable_effect(low, high, noise_floor=floor, confidence=confidence) if high > low else math.nan
    decision = _decide(low, high, floor)
    if decision == UNCLEAR and floor > min_effect and ranks_decide:
        # The floor is the widest spread between agreeing runs, which only grows as rounds are
        # added: six rounds of a steady x1.15 whose runs on a side spread 12-14% could never be
        # confirmed (tests/bench/test_runs.py; the likely cause of a CI failure of 2026-12-03,
        # whose log cut the figures). Their ranks can; the rank test holds its 5% level on its
        # own, and the floor's test, far stricter, adds little to the chance of a false "faster".
        by_ranks, rank_low, rank_high = _by_ranks(a_mean, b_mean, min_effect)
        if by_ranks != UNCLEAR:  # no detectable effect: that figure belongs to the bootstrap CI
            verdict = Verdict(by_ranks, ratio, rank_low, rank_high, floor, math.nan, n_a, n_b)
            return RunsVerdict(verdict, a_mean, b_mean, a_kept, b_kept, spread, corroborated, separated=True,
                               paired=paired)
    verdict = Verdict(decision, ratio, low, high, floor, mde, n_a, n_b)
    return RunsVerdict(verdict, a_mean, b_mean, a_kept, b_kept, spread, corroborated, paired=paired)


def _by_ranks(a_means: Sequence[float], b_means: Sequence[float], min_effect: float) -> tuple[str, float, float]:
    """The rank test's decision on B against A, with its interval (`_rank_interval`)."""
    low, high = _rank_interval(a_means, b_means)
    return _decide(low, high, min_effect), low, high


def _rank_interval(a_means: Sequence[float], b_means: Sequence[float], alpha: float = 0.05) -> tuple[float, float]:
    """A distribution-free interval of the run ratio B / A: the sorted ratios of every pair of runs
    (b_i / a_j), less the `c` smallest and the `c` largest, where `c` is the largest count of pairs
    with B ahead whose chance under no difference is at most `alpha` (one-sided, the exact
    distribution of the Mann-Whitney statistic). The interval lies below 1 exactly when the rank
    test says B is faster at `alpha` (Hodges-Lehmann; Lehmann, Nonparametrics, 1975, ch. 2). With
    3 + 3 runs `c` is 0: the range of the run ratios. By hand: scipy is not a dependency, and its
    `mannwhitneyu` gives the test's p-value, not this interval."""
    m, n = len(a_means), len(b_means)
    ratios = np.sort(np.divide.outer(np.asarray(b_means), np.asarray(a_means)).ravel())
    below = np.cumsum(_mann_whitney_counts(m, n)) / math.comb(m + n, m)  # P(U <= u) under no difference
    c = int(np.searchsorted(below, alpha + 1e-12, side="right")) - 1  # the largest u with P(U <= u) <= alpha
    c = min(max(c, 0), (m * n - 1) // 2)
    return float(ratios[c]), float(ratios[m * n - 1 - c])


def _mann_whitney_counts(m: int, n: int) -> np.ndarray:
    """How many of the C(m + n, m) orderings of m A runs and n B runs have U = u, for u = 0..m*n
    (the recursion N(u; m, n) = N(u - n; m - 1, n) + N(u; m, n - 1): the largest run is an A run,
    ahead of all n B runs, or a B run)."""
    table = {(0, j): np.ones(1) for j in range(n + 1)} | {(i, 0): np.ones(1) for i in range(m + 1)}
    for i in range(1, m + 1):
        for j in range(1, n + 1):
            counts = np.zeros(i * j + 1)
            counts[j:] += table[(i - 1, j)]
            counts[: i * (j - 1) + 1] += table[(i, j - 1)]
            table[(i, j)] = counts
    return table[(m, n)]


def _bootstrap_log_means(runs: list[np.ndarray], rng: np.random.Generator) -> np.ndarray:
    """`N_BOOT` bootstrap values of each run's log mean step, each from a resample of the run's own
    steps: shape (runs, N_BOOT), medians over the runs (or the rounds) taken by the caller. The
    runs themselves are not resampled: with the handful of runs a tuner can afford, resampling
    them would let one disturbed run of three decide a quarter of the draws; their disagreement
    is the noise floor's business instead. A run whose steps repeat with a period (a `loss.item()`
    every 4 steps) is resampled in whole cycles (`bench.periodic`): its steps are no independent draws."""
    return np.log(np.stack([bootstrap_blocks(r, rng, np.mean, N_BOOT, _MAX_CELLS) for r in runs]))
