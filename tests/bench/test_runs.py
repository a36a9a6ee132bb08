"""compare_runs: the decision on whole runs measured in interleaved rounds (the tuner's)."""

from __future__ import annotations

import math
import statistics

import numpy as np
import pytest

from torchdoctor.bench import FASTER, UNCLEAR, BenchInputError, agreeing_runs, compare_runs, t_quantile_95


def _run(median: float, n: int = 20, seed: int = 0, noise: float = 0.02) -> list[float]:
    rng = np.random.default_rng(seed)
    return list(median * (1 + noise * rng.standard_normal(n)).clip(0.5))


def test_the_largest_group_of_agreeing_runs_is_kept_and_a_slow_outlier_left_out() -> None:
    assert agreeing_runs([0.1, 0.5, 0.102]) == [0, 2]
    assert agreeing_runs([0.5, 0.1]) == [1]  # two that disagree: the faster one, not corroborated
    assert agreeing_runs([0.1, 0.3, 0.31]) == [1, 2]  # the majority, even when slower


def test_a_disturbed_reference_run_is_never_divided_by() -> None:
    # The first A run ran 5x slower (another process on the cores); the second agrees with a third.
    a = [_run(0.5, seed=1), _run(0.1, seed=2), _run(0.101, seed=3)]
    b = [_run(0.05, seed=4), _run(0.051, seed=5), _run(0.05, seed=6)]
    result = compare_runs(a, b)
    assert result.a_kept == [1, 2] and result.corroborated and result.disturbed == 1
    assert result.verdict.verdict == FASTER
    assert 0.45 < result.verdict.ratio < 0.55  # x2, not x10


def test_two_runs_that_disagree_are_not_corroborated() -> None:
    result = compare_runs([_run(0.5), _run(0.1, seed=1)], [_run(0.05, seed=2), _run(0.05, seed=3)])
    assert not result.corroborated


def test_run_to_run_spread_becomes_the_noise_floor() -> None:
    a = [_run(0.100, seed=1), _run(0.112, seed=2)]  # 12% apart: kept, but that much noise
    b = [_run(0.095, seed=3), _run(0.105, seed=4)]
    result = compare_runs(a, b, min_effect=0.02)
    assert result.verdict.noise_floor > 0.1
    assert result.verdict.verdict == UNCLEAR


def test_identical_configurations_give_no_clear_difference() -> None:
    a = [_run(0.1, seed=s) for s in (1, 2)]
    b = [_run(0.1, seed=s) for s in (3, 4)]
    assert compare_runs(a, b).verdict.verdict == UNCLEAR


def test_runs_that_disagree_are_decided_only_by_complete_separation() -> None:
    a = [_run(0.10, seed=1), _run(0.13, seed=2), _run(0.17, seed=3)]  # no two within 15%
    b = [_run(0.05, seed=4), _run(0.065, seed=5), _run(0.085, seed=6)]
    result = compare_runs(a, b)
    assert not result.corroborated and result.separated and result.decided
    assert result.verdict.verdict == FASTER and result.verdict.ci_high < 1
    overlapping = [_run(0.05, seed=4), _run(0.065, seed=5), _run(0.12, seed=6)]  # one run beside A's
    result = compare_runs(a, overlapping)
    assert not result.decided and result.verdict.verdict == UNCLEAR
    assert not compare_runs(a[:2], b[:2]).decided  # two runs a side: too few for separation


def test_many_runs_that_disagree_are_decided_by_their_ranks() -> None:
    # tune's confirmation on the zoo's compute_threads (2026-12-03): 8 intra-op threads on 2 cores ran
    # 15-69 ms a step, 2 threads 8-10 ms in seven runs of eight and 24.5 ms in one. The baseline's runs
    # never corroborate each other (it is the oversubscription that makes them vary), and the one slow
    # run of the fix is slower than the baseline's fastest, so complete separation never comes.
    baseline_ms = [15.4, 43.4, 29.4, 68.7, 42.6, 40.1, 18.5, 21.5]
    fixed_ms = [9.21, 10.4, 9.63, 8.07, 9.69, 24.5, 10.4, 8.39]
    result = compare_runs([_run(t / 1e3, seed=i) for i, t in enumerate(baseline_ms)],
                          [_run(t / 1e3, seed=10 + i) for i, t in enumerate(fixed_ms)])
    assert not result.corroborated and result.separated and result.decided
    assert result.verdict.verdict == FASTER
    # the rank interval: the 64 run ratios less the 15 at each end (the exact 5% critical value for 8 + 8)
    assert 0.15 < result.verdict.ci_low < result.verdict.ratio < result.verdict.ci_high < 0.6
    # Shuffled into each other, the same eight runs a side tell nothing apart.
    mixed = compare_runs([_run(t / 1e3, seed=i) for i, t in enumerate(baseline_ms)],
                         [_run(t * 0.9 / 1e3, seed=10 + i) for i, t in enumerate(reversed(baseline_ms))])
    assert not mixed.decided and mixed.verdict.verdict == UNCLEAR


def test_agreeing_runs_whose_spread_hides_a_steady_effect_are_decided_by_their_ranks() -> None:
    # Six rounds of a loader fix (x1.15) whose runs on each side agree within 15%, yet spread more
    # than the effect: the noise floor (the widest spread) hides it, every B run still beats every A run.
    baseline_ms = [12.0, 13.5, 12.4, 13.2, 12.8, 13.4]
    fixed_ms = [10.4, 11.7, 11.0, 11.9, 11.2, 10.9]
    result = compare_runs([_run(t / 1e3, seed=i, noise=0.01) for i, t in enumerate(baseline_ms)],
                          [_run(t / 1e3, seed=10 + i, noise=0.01) for i, t in enumerate(fixed_ms)])
    assert result.corroborated and result.verdict.noise_floor > 1 - result.verdict.ratio
    assert result.separated and result.verdict.verdict == FASTER
    assert result.verdict.ci_low < result.verdict.ratio < result.verdict.ci_high < 1 - 0.02
    # Two rounds of such runs are too few for ranks: the floor decides, and it cannot.
    two = compare_runs([_run(t / 1e3, seed=i, noise=0.01) for i, t in enumerate(baseline_ms[:2])],
                       [_run(t / 1e3, seed=10 + i, noise=0.01) for i, t in enumerate(fixed_ms[2:4])])
    assert two.corroborated and not two.separated and two.verdict.verdict == UNCLEAR


@pytest.mark.parametrize("log_sd, tolerance", [
    # erratic runs, tolerance 0: no two runs agree, so every comparison takes the rank path alone
    # (3 + 3 runs: complete separation, 1 in 20 each way)
    (0.5, 0.0),
    # runs that scatter 5%: most agree within the 15% tolerance, their spread is the floor, and the
    # ranks are consulted where it hides an effect
    (0.05, 0.15),
], ids=["runs-that-disagree", "agreeing-runs"])
def test_the_rank_test_keeps_its_level_when_nothing_changed(log_sd: float, tolerance: float) -> None:
    # Runs of A and B drawn from one distribution: "faster" or "slower" in at most about 5% + 5% of
    # the trials, as the exact critical values promise.
    rng = np.random.default_rng(7)
    for sides in (3, 5, 8):
        decided = 0
        for trial in range(300):
            means = np.exp(rng.normal(0.0, log_sd, size=2 * sides)) / 100
            result = compare_runs([[m] * 6 for m in means[:sides]], [[m] * 6 for m in means[sides:]],
                                  tolerance=tolerance)
            decided += result.verdict.verdict != UNCLEAR
        assert decided / 300 <= 0.10 + 0.04, (sides, decided)


def test_a_run_is_judged_by_its_pace_not_by_its_median_step() -> None:
    # B: workers that deliver in bursts, 15 batches ready (0.4 ms steps) then a 30 ms wait; its
    # median step is 0.4 ms but its pace 2.25 ms a step, slower than A's steady 2 ms.
    burst = [0.0004] * 15 + [0.030]
    a = [_run(0.002, n=32, seed=s) for s in (1, 2, 3)]
    b = [burst * 2 for _ in range(3)]
    result = compare_runs(a, b)
    assert result.verdict.verdict != FASTER
    assert 1.05 < result.verdict.ratio < 1.20
    assert result.b_means[0] == pytest.approx(0.00225)


def test_the_uncertainty_of_the_ratio_counts_the_scatter_between_runs() -> None:
    # Runs 6% apart from each other: what a second measurement of the same two sides would see.
    scatter = (1.0, 1.06, 0.95, 1.03, 0.97, 1.05)
    def sides(count: int) -> tuple[list[list[float]], list[list[float]]]:
        a = [_run(0.1 * scatter[i], seed=i, noise=0.001) for i in range(count)]
        b = [_run(0.05 * scatter[-1 - i], seed=10 + i, noise=0.001) for i in range(count)]
        return a, b
    three, six = compare_runs(*sides(3)), compare_runs(*sides(6))
    bootstrap_half = math.sqrt(three.verdict.ci_high / three.verdict.ci_low) - 1
    assert three.half_width > 5 * bootstrap_half  # the steps within runs hardly scatter at all
    # three runs a side: Student's t with 2 degrees of freedom, 4.30 where the normal's 1.96 said +-14%
    assert 0.04 < six.half_width < three.half_width < 0.35
    assert compare_runs([_run(0.1)], [_run(0.05)]).half_width == math.inf  # one run a side: unknown


def _rounds(a_ms: list[float], b_ms: list[float]) -> tuple[list[list[float]], list[list[float]]]:
    return ([_run(t / 1e3, seed=i, noise=0.001) for i, t in enumerate(a_ms)],
            [_run(t / 1e3, seed=50 + i, noise=0.001) for i, t in enumerate(b_ms)])


def test_paired_the_ratio_is_the_rounds_own_and_lies_within_what_its_halves_measured() -> None:
    """tune's confirmation of the zoo's compute_anomaly (tune_zoo run 23,
    benchmarks/results/2026-12-03-tune-zoo.md): nine rounds of the baseline (ms) and the kept knobs,
    the machine drifting. The sides' medians came from different rounds (A's 3.88 ms, B's 1.55 ms):
    x2.50, where the first and second halves of the rounds measured x2.45 and x2.39, and the
    re-measurement a few minutes later x2.19-x2.28."""
    a_ms = [4.00, 4.09, 3.92, 3.88, 3.70, 3.70, 3.58, 3.89, 3.74]
    b_ms = [1.70, 1.63, 1.55, 1.60, 1.55, 1.53, 1.55, 1.59, 1.55]
    unpaired, paired = compare_runs(*_rounds(a_ms, b_ms)), compare_runs(*_rounds(a_ms, b_ms), paired=True)
    assert 1 / unpaired.verdict.ratio == pytest.approx(2.50, abs=0.01)
    assert paired.paired and paired.to_dict()["paired"]
    rounds = sorted(a / b for a, b in zip(a_ms, b_ms))
    assert 1 / paired.verdict.ratio == pytest.approx(rounds[4], rel=1e-3)  # the median round: x2.42
    halves = [statistics.median(a_ms[:4]) / statistics.median(b_ms[:4]),
              statistics.median(a_ms[4:]) / statistics.median(b_ms[4:])]
    assert min(halves) < 1 / paired.verdict.ratio < max(halves) < 1 / unpaired.verdict.ratio
    assert paired.verdict.ci_low < paired.verdict.ratio < paired.verdict.ci_high


def _campaigns(machine_sd: float, paired: bool) -> tuple[list[float], list[float]]:
    """200 seeded campaigns of eight rounds with a true ratio of 0.5: each round's two runs share the
    machine's state (log sd `machine_sd`: a tenant on the second core slows both), each run has its
    own 2% noise. Each campaign's |log(ratio / 0.5)| and half width."""
    rng = np.random.default_rng(3)
    errors, widths = [], []
    for _ in range(200):
        machine = np.exp(rng.normal(0, machine_sd, 8))
        a = [[0.010 * m * math.exp(rng.normal(0, 0.02))] * 5 for m in machine]
        b = [[0.005 * m * math.exp(rng.normal(0, 0.02))] * 5 for m in machine]
        result = compare_runs(a, b, paired=paired)
        errors.append(abs(math.log(result.verdict.ratio / 0.5)))
        widths.append(result.half_width)
    return errors, widths


def test_paired_a_machine_that_moves_from_round_to_round_cancels_within_each_round() -> None:
    # Measured: the 90th-percentile error paired 1.9% whether the machine moves 2% or 8% round to
    # round; by the sides' medians 2.3% and 2.9%.
    calm, busy = _campaigns(0.02, paired=True), _campaigns(0.08, paired=True)
    assert np.quantile(busy[0], 0.9) == pytest.approx(np.quantile(calm[0], 0.9), rel=1e-6)
    unpaired_calm, unpaired_busy = _campaigns(0.02, paired=False), _campaigns(0.08, paired=False)
    assert np.quantile(unpaired_calm[0], 0.9) < np.quantile(unpaired_busy[0], 0.9)
    assert np.quantile(busy[0], 0.9) < 0.8 * np.quantile(unpaired_busy[0], 0.9)
    # The uncertainty is the rounds' scatter (2% + 2% of one round's two runs), not the machine's.
    assert np.quantile(busy[0], 0.95) < 0.04
    assert np.median(busy[1]) < 0.5 * np.median(unpaired_busy[1])
    assert np.mean(np.array(busy[0]) <= np.array(busy[1])) > 0.85  # the half width covers the error


def test_the_ci_across_runs_holds_the_scatter_between_rounds_that_the_bootstrap_of_steps_misses() -> None:
    # The campaigns' runs repeat one step time: the bootstrap of steps sees no noise at all, while the
    # rounds' two runs differ by 2% each. Measured: the bootstrap CI holds the true ratio in 17 of 200
    # campaigns, the CI across runs in 184 (92%).
    rng = np.random.default_rng(3)
    bootstrap, across = 0, 0
    for _ in range(200):
        machine = np.exp(rng.normal(0, 0.08, 8))
        a = [[0.010 * m * math.exp(rng.normal(0, 0.02))] * 5 for m in machine]
        b = [[0.005 * m * math.exp(rng.normal(0, 0.02))] * 5 for m in machine]
        result = compare_runs(a, b, paired=True)
        low, high = result.ci_across_runs
        assert low <= result.verdict.ci_low and result.verdict.ci_high <= high and low < result.verdict.ratio < high
        assert result.to_dict()["ci_across_runs"] == [low, high]
        bootstrap += result.verdict.ci_low <= 0.5 <= result.verdict.ci_high
        across += low <= 0.5 <= high
    assert bootstrap <= 20 and across >= 180


def test_the_ci_across_runs_is_unknown_without_two_agreeing_runs_a_side_and_a_rank_interval_when_separated() -> None:
    one = compare_runs([_run(0.1)], [_run(0.05, seed=1)])
    assert one.ci_across_runs is None and one.to_dict()["ci_across_runs"] is None
    # runs that disagree among themselves, every B beyond every A: decided by ranks, whose interval is one of runs
    a = [_run(t, seed=i) for i, t in enumerate((0.10, 0.16, 0.12))]
    b = [_run(t, seed=10 + i) for i, t in enumerate((0.05, 0.08, 0.06))]
    ranked = compare_runs(a, b)
    assert ranked.separated and ranked.ci_across_runs == (ranked.verdict.ci_low, ranked.verdict.ci_high)


def test_paired_runs_come_in_rounds() -> None:
    a, b = _rounds([10.0, 10.2, 9.9], [5.0, 5.1, 4.9])
    with pytest.raises(BenchInputError, match="equal counts"):
        compare_runs(a, b[:2], paired=True)
    # a round whose run timed no step has no ratio: the other rounds stand
    result = compare_runs(a, [b[0], [], b[2]], paired=True)
    assert result.a_means == pytest.approx([x[0] for x in (a[0], a[2])], rel=0.01) and len(result.b_means) == 2


def test_a_ranked_verdict_beside_a_steady_baseline_is_as_uncertain_as_the_other_sides_runs() -> None:
    """The zoo's worker-restart confirmation (tune_zoo run 30, benchmarks/results/2026-12-04-tune-zoo.md):
    1 s sleeps make the baseline runs 0.5% apart, the tuned runs scatter 2.77-4.55 ms; 8 of 16 rounds
    agree. The rank interval alone said +-4%, the agreeing rounds +-2.3%; the robust scatter of all
    16 rounds +-6.8%."""
    a_ms = [262.5, 265.2, 265.2, 266.3, 266.0, 265.7, 265.6, 265.0, 263.6, 266.3, 262.5, 265.2, 265.6, 265.0,
            264.9, 263.5]
    b_ms = [2.77, 4.02, 3.78, 4.55, 2.80, 3.57, 3.86, 2.79, 4.36, 3.61, 3.44, 3.56, 4.30, 4.25, 3.80, 3.69]
    a, b = _rounds(a_ms, b_ms)
    result = compare_runs(a, b, paired=True)
    assert result.separated and result.verdict.verdict == FASTER
    rank_half = math.sqrt(result.verdict.ci_high / result.verdict.ci_low) - 1
    assert rank_half < 0.05 and 0.06 < result.half_width < 0.08
    low, high = result.ci_across_runs
    assert low < result.verdict.ci_low and high > result.verdict.ci_high  # widened beyond the ranks'
    assert high / low > 1.12


def test_from_enough_rounds_periodic_steps_are_as_uncertain_as_the_runs_means_scatter_not_as_resampled_steps() -> None:
    """The zoo's worker-restart confirmation on the default settings (tune_zoo run 30,
    benchmarks/results/2026-12-04-tune-zoo.md): the baseline restarts its DataLoader worker every 4th
    step (a 1 s wait), so each 20-step run holds exactly five waits and its mean is steady to 1%; the
    kept persistent workers run ~400 steps of ~3 ms. Resampling the steps as independent draws put
    anywhere from one to ten waits in a run: "+-35%" (x61.7-x113.1) where the 11 rounds' ratios
    scattered +-6% and the re-measurement found x86.49."""
    a_ms = [266.0, 263.54, 260.81, 262.03, 265.11, 264.16, 263.38, 266.24, 264.61, 263.51, 266.12]
    b_ms = [4.262, 2.884, 2.357, 2.536, 2.826, 2.8, 3.052, 2.861, 3.174, 3.534, 3.04]
    rng = np.random.default_rng(0)
    def periodic(mean_ms: float) -> list[float]:
        wait = (4 * mean_ms - 3 * 4.0) / 1e3
        return [wait, 0.004, 0.004, 0.004] * 5
    def bursty(mean_ms: float) -> list[float]:
        steps = rng.exponential(1.0, 397)
        return list(steps * mean_ms / 1e3 / steps.mean())
    a, b = [periodic(t) for t in a_ms], [bursty(t) for t in b_ms]
    result = compare_runs(a, b, paired=True)
    assert result.from_scatter and result.to_dict()["from_scatter"]
    assert 0.05 < result.half_width == result.run_to_run < 0.1
    low, high = result.ci_across_runs
    assert low < 1 / 86.49 < high and high / low < 1.2
    # With fewer rounds than SCATTER_ROUNDS the bootstrap still counts, but it resamples the baseline's
    # 4-step cycles whole (bench.periodic): +-35% before it did, when every confirmation of a few
    # rounds, and every trial, was judged on it.
    few = compare_runs(a[:5], b[:5], paired=True)
    assert math.sqrt(few.verdict.ci_high / few.verdict.ci_low) - 1 < 0.1
    assert not few.from_scatter and few.half_width == few.run_to_run  # five rounds' scatter, not the steps'


def test_the_run_to_run_quantile_is_students_t_for_the_rounds_it_was_estimated_from() -> None:
    exact = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 10: 2.228, 30: 2.042}
    for df, t in exact.items():
        assert t_quantile_95(df) == pytest.approx(t, rel=0.01)
    assert t_quantile_95(0) == math.inf
    # Six rounds whose log ratios scatter with sd s = 2.6%: 2.57 x 1.25 x s / sqrt(6), not 1.96 x ...
    logs = [-0.04, -0.01, 0.0, 0.01, 0.04, 0.0]
    a, b = _rounds([10.0] * 6, [5.0 * math.exp(x) for x in logs])
    result = compare_runs(a, b, paired=True)
    sd = float(np.std(logs, ddof=1))
    assert result.run_to_run == pytest.approx(math.expm1(2.571 * 1.2533 * sd / math.sqrt(6)), rel=0.02)


def test_rounds_that_gained_far_less_than_the_median_round_are_named() -> None:
    """The zoo's grad-inference confirmation, ms a step (tune_zoo run 31,
    benchmarks/results/2026-12-04-tune-zoo.md): two threads gain only while the second core is free;
    in rounds 4 and 5 it was not. A re-measurement minutes later measured x1.10."""
    a_ms = [0.423, 0.414, 0.422, 0.421, 0.451, 0.419, 0.416, 0.424, 0.446, 0.418, 0.418]
    b_ms = [0.298, 0.295, 0.304, 0.429, 0.419, 0.291, 0.298, 0.317, 0.318, 0.292, 0.331]
    result = compare_runs(*_rounds(a_ms, b_ms), paired=True)
    assert 1 / result.verdict.ratio == pytest.approx(1.40, abs=0.01)
    assert result.lagging_rounds == [3, 4]
    # rounds that scatter alike, however widely, lag nowhere; unpaired runs are not rounds
    steady = compare_runs(*_rounds(a_ms, [t * 0.7 * (1 + 0.05 * (-1) ** i) for i, t in enumerate(a_ms)]), paired=True)
    assert steady.lagging_rounds == []
    assert compare_runs(*_rounds(a_ms, b_ms)).lagging_rounds == []


def test_a_ranked_verdicts_printed_interval_is_the_ranks_95_percent_one_not_the_decisions_90() -> None:
    # Eight runs a side that disagree among themselves (tolerance 0): decided by their ranks at the
    # one-sided 5% level, a 90% interval; the CI tune prints is the 95% one (2.5% a side), wider.
    rng = np.random.default_rng(4)
    a = [[m] * 6 for m in np.exp(rng.normal(0.0, 0.2, 8)) / 100]
    b = [[m] * 6 for m in np.exp(rng.normal(-0.7, 0.2, 8)) / 100]
    result = compare_runs(a, b, tolerance=0.0)
    assert result.separated and result.verdict.verdict == FASTER
    low, high = result.ci_across_runs
    assert low < result.verdict.ci_low and high > result.verdict.ci_high
    ratios = np.sort(np.divide.outer([r[0] for r in b], [r[0] for r in a]).ravel())
    # Mann-Whitney, 8 + 8: P(U <= 13) = 0.0249, P(U <= 15) = 0.0415, P(U <= 16) = 0.0524; the printed
    # interval drops the 13 smallest and 13 largest of the 64 pair ratios, the decision's 15
    assert (low, high) == (ratios[13], ratios[-14])
    assert (result.verdict.ci_low, result.verdict.ci_high) == (ratios[15], ratios[-16])


def test_paired_rounds_whose_runs_split_between_two_machine_states_still_have_a_run_to_run_uncertainty() -> None:
    """The zoo's anomaly row's confirmation, ms a step (tune_zoo run 32,
    benchmarks/results/2026-12-04-tune-zoo.md): the machine moved between two states, so each side's
    runs split into two groups and only one round had both runs in the larger ones (the baseline at
    5.0-5.7 or 7.4-7.8 ms, 1 steady round of 12); "run to run unknown" was printed where the rounds'
    ratios scatter about 10%."""
    a_ms = [5.1, 7.36, 5.04, 5.71, 5.5, 7.71, 7.84, 7.52, 7.83, 6.15, 5.95, 6.6]
    b_ms = [3.42, 4.14, 3.21, 3.25, 3.41, 4.11, 4.15, 4.66, 3.61, 3.64, 3.51, 3.76]
    result = compare_runs(*_rounds(a_ms, b_ms), paired=True)
    assert len([i for i in result.a_kept if i in result.b_kept]) < 2
    logs = np.log(np.divide(b_ms, a_ms))
    robust_sd = 1.4826 * float(np.median(np.abs(logs - np.median(logs))))
    assert result.run_to_run == pytest.approx(math.expm1(t_quantile_95(11) * 1.2533 * robust_sd / math.sqrt(12)),
                                              rel=0.01)
    assert 0.03 < result.run_to_run < 0.12 and math.isfinite(result.half_width)  # the ranks' 95% interval may be wider
    # two rounds are no scale
    assert compare_runs(*_rounds(a_ms[:2], b_ms[:2]), paired=True, tolerance=0.0).run_to_run == math.inf
