"""The gate's values and decisions (torchdoctor.analyse.check): pure functions on hand-made inputs."""

from __future__ import annotations

import math

import pytest

from torchdoctor.analyse.check import (
    PASS, REGRESSION, UNDECIDED, Metric, baseline_document, compare_figures, decide, findings_changes, fingerprint,
    fingerprint_differences, gate_settled, grown_rows, memory_changes, metric_from_verdict, observation_figures,
    operator_coverage, pass_bound, phase_changes, read_baseline, reason_for, time_gate,
)
from torchdoctor.bench import SLOWER, TOO_FEW, UNCLEAR, Verdict
from tests.findings import finding
from torchdoctor.record import Record, StepSample


def verdict(ratio: float, low: float, high: float, kind: str = UNCLEAR, floor: float = 0.02, n: int = 8) -> Verdict:
    return Verdict(kind, ratio, low, high, floor, 0.04, n, n)


@pytest.mark.parametrize(
    ("v", "final", "expected"),
    [
        (verdict(1.30, 1.20, 1.40, SLOWER), False, REGRESSION),  # significant and beyond 5%
        (verdict(1.04, 1.03, 1.045, SLOWER), False, PASS),  # significant, but within 5%: CI rules >5% out
        (verdict(1.00, 0.97, 1.03), False, PASS),  # A vs A, clear
        (verdict(1.01, 0.95, 1.08), False, UNDECIDED),  # not yet: the CI reaches beyond 5%
        (verdict(1.01, 0.95, 1.08), True, PASS),  # last look: the estimate is within 5%
        (verdict(1.07, 0.99, 1.15), True, UNDECIDED),  # beyond 5% but not significant: the noise hides it
        (verdict(1.07, math.nan, math.nan, TOO_FEW, n=3), True, UNDECIDED),
    ],
)
def test_time_gate(v: Verdict, final: bool, expected: str) -> None:
    assert time_gate(v, 0.05, final=final) == expected


def test_a_pass_at_a_look_needs_only_that_looks_own_95_percent_ci() -> None:
    wide = verdict(1.00, 0.90, 1.10)  # the CI of one look of six, at 99.17%
    bound = pass_bound(wide, 1 - 0.05 / 6)
    assert 1.07 < bound < 1.08  # the same data's 95% CI ends near +7.7%
    assert time_gate(wide, 0.09, final=False, look_confidence=1 - 0.05 / 6) == PASS
    assert time_gate(wide, 0.09, final=False) == UNDECIDED  # the corrected CI reaches +10%
    assert time_gate(wide, 0.05, final=False, look_confidence=1 - 0.05 / 6) == UNDECIDED
    assert pass_bound(wide, None) == 1.10


def test_a_session_as_noisy_as_the_threshold_passes_nothing_before_the_last_look() -> None:
    # A "+5%" change measured -32% over 5 rounds in which A ran slow; its own A-vs-A was 27% apart.
    noisy = verdict(0.68, 0.60, 0.94, floor=0.27)
    assert time_gate(noisy, 0.05, final=False) == UNDECIDED
    assert time_gate(noisy, 0.05, final=True) == PASS  # rounds spent: the estimate is within 5%
    assert time_gate(verdict(0.68, 0.60, 0.94, floor=0.049), 0.05, final=False) == PASS


def test_gate_settles_only_on_a_clear_answer() -> None:
    settled = gate_settled(0.05)
    assert settled(verdict(1.30, 1.20, 1.40, SLOWER))
    assert settled(verdict(1.00, 0.98, 1.02))
    assert not settled(verdict(1.01, 0.95, 1.08))


def test_a_regression_needs_the_estimate_beyond_the_threshold() -> None:
    # Significantly slower by 3%: a real slowdown, but within the allowed 5%.
    metric = metric_from_verdict("step_time", "step time", verdict(1.03, 1.021, 1.06, SLOWER), [1.0] * 8, [1.03] * 8,
                                 threshold=0.05)
    assert metric.gate == PASS and metric.verdict == "worse"
    reason = reason_for(PASS, [metric], stop_reason="max_rounds", rounds=40, budget_s=300)
    assert "within the allowed +5.0%" in reason and "slower, but within" in reason


def test_memory_gates_on_its_own_threshold() -> None:
    grown = compare_figures("peak_memory", "peak memory", [100e6] * 6, [125e6] * 5, unit="bytes", better="lower",
                            min_effect=0.02, threshold=0.10)
    assert grown is not None and grown.gate == REGRESSION and grown.change == pytest.approx(0.25)
    same = compare_figures("peak_memory", "peak memory", [100e6] * 6, [104e6] * 5, unit="bytes", better="lower",
                           min_effect=0.02, threshold=0.10)
    assert same is not None and same.gate == PASS
    few = compare_figures("peak_memory", "peak memory", [100e6] * 2, [150e6] * 2, unit="bytes", better="lower",
                          min_effect=0.02, threshold=0.10)
    assert few is not None and few.gate == UNDECIDED
    assert compare_figures("compile_time", "compile time", [None, 0], [None], unit="s", better="lower",
                           min_effect=0.02) is None


def test_samples_per_s_is_worse_when_lower() -> None:
    metric = compare_figures("samples_per_s", "samples/s", [100.0] * 8, [70.0] * 8, unit="samples/s",
                             better="higher", min_effect=0.02)
    assert metric is not None and metric.verdict == "worse" and metric.gate is None


def test_decide_takes_the_worst_gate() -> None:
    def gated(gate: str | None) -> Metric:
        return Metric("m", "m", "s", "lower", gate=gate)

    assert decide([gated(PASS), gated(REGRESSION)]) == REGRESSION
    assert decide([gated(PASS), gated(UNDECIDED), gated(None)]) == UNDECIDED
    assert decide([gated(PASS), gated(None)]) == PASS
    assert decide([gated(None)]) == UNDECIDED


def test_the_undecided_reason_says_why_and_what_to_do() -> None:
    metric = metric_from_verdict("step_time", "step time", verdict(1.07, 0.99, 1.15), [1.0] * 8, [1.07] * 8,
                                 threshold=0.05)
    reason = reason_for(UNDECIDED, [metric], stop_reason="budget", rounds=12, budget_s=60)
    assert reason.startswith("cannot decide within the budget of 60 s (12 rounds)")
    assert "not significantly slower" in reason and "noise floor 2.0%" in reason and "raise --budget" in reason
    interrupted = reason_for(UNDECIDED, [metric], stop_reason="interrupted", rounds=3, budget_s=60)
    assert interrupted.startswith("interrupted (Ctrl-C) after 3 complete round(s): measured so far step time +7.0%")


def _record(walls: list[float], *, forward: float = 0.0, batch: int | None = 4, peak: int | None = None) -> Record:
    record = Record(steps=[StepSample(i, w, forward_s=forward, batch_size=batch) for i, w in enumerate(walls)])
    if peak is not None:
        record.memory = {"breakdown": {"peak_bytes": peak, "method": "mem_tracker",
                                       "categories_bytes": {"activations": peak // 2, "parameters": peak // 2}}}
    return record


def test_observation_figures() -> None:
    figures = observation_figures(_record([0.010, 0.012, 0.011], forward=0.004, peak=1000))
    assert figures["step_s"] == pytest.approx(0.011) and figures["clock"] == "mean step"
    assert figures["sample_s"] == pytest.approx(0.011 / 4) and figures["batch_size"] == 4
    assert figures["phases"]["forward"] == pytest.approx(0.004)
    assert figures["phases"]["other"] == pytest.approx(0.011 - 0.004)
    assert figures["peak_bytes"] == 1000 and figures["compile_s"] is None
    assert observation_figures(Record())["step_s"] is None


def test_an_observation_is_judged_by_its_pace_so_a_cost_paid_every_few_steps_counts() -> None:
    # A checkpoint every 5th step: the median step is unchanged, training is 40% slower.
    plain = observation_figures(_record([0.010] * 10))
    every_fifth = observation_figures(_record([0.010, 0.010, 0.010, 0.010, 0.030] * 2))
    assert every_fifth["step_s"] / plain["step_s"] == pytest.approx(1.4)
    assert every_fifth["sample_s"] / plain["sample_s"] == pytest.approx(1.4)
    assert plain["samples_per_s"] / every_fifth["samples_per_s"] == pytest.approx(1.4)
    assert sum(every_fifth["phases"].values()) == pytest.approx(every_fifth["step_s"])


def test_phase_changes_mark_the_phases_behind_the_growth() -> None:
    a = [observation_figures(_record([0.010] * 3, forward=0.004))] * 3
    b = [observation_figures(_record([0.015] * 3, forward=0.009))] * 3
    rows = phase_changes(a, b)
    assert rows[0]["phase"] == "forward" and rows[0]["grew"] and rows[0]["share"] == pytest.approx(1.0)
    assert not any(r["grew"] for r in rows[1:])


def test_grown_rows_merge_profiler_steps_and_drop_small_changes() -> None:
    def row(name: str, a: float, b: float, status: str) -> dict:
        return {"name": name, "us_per_step_a": a, "us_per_step_b": b, "count_per_step_a": 1.0,
                "count_per_step_b": 1.0, "delta_us_per_step": b - a, "status": status}

    rows = [row("aten::mm", 100, 400, "slower"), row("aten::add", 50, 52, "slower"),
            row("aten::cumsum", 0, 90, "added"), row("aten::relu", 80, 10, "faster"), row("ProfilerStep#2", 10, 500, "slower"),
            row("ProfilerStep#3", 10, 500, "slower")]
    grown = grown_rows(rows, min_delta_us=20)
    assert [r["name"] for r in grown] == ["ProfilerStep (Python between operators)", "aten::mm", "aten::cumsum"]
    assert grown[0]["delta_us_per_step"] == pytest.approx(980)
    assert operator_coverage(rows[:4], step_delta_s=0.010) is not None  # +0.39 ms of +10 ms: elsewhere
    assert operator_coverage(rows[:4], step_delta_s=0.0004) is None


def test_findings_and_memory_changes() -> None:
    a = [finding("TD-DATA-002", title="data"), finding("TD-COMP-003", severity="info", title="tiny ops")]
    b = [finding("TD-DATA-002", title="data"), finding("TD-MEM-001", title="memory")]
    appeared, vanished = findings_changes(a, b)
    assert appeared == [{"id": "TD-MEM-001", "severity": "warning", "title": "memory"}]
    assert [f["id"] for f in vanished] == ["TD-COMP-003"]
    rows = memory_changes([{"memory_categories": {"activations": 10, "parameters": 5}}],
                          [{"memory_categories": {"activations": 30, "parameters": 5}}])
    assert rows == [{"category": "activations", "a_bytes": 10, "b_bytes": 30, "delta_bytes": 20}]


def test_fingerprints_compare_the_machine_and_the_software() -> None:
    env = {"versions": {"torch": "2.13.0", "cuda": None, "hip": None, "python": "3.11.7"},
           "cpu": {"model": "Xeon", "logical_cores": 2}, "devices": {"gpus": []}}
    other = {**env, "cpu": {"model": "EPYC", "logical_cores": 2}, "versions": {**env["versions"], "python": "3.12"}}
    differences = fingerprint_differences(fingerprint(env), fingerprint(other))
    assert differences == [{"key": "cpu_model", "a": "Xeon", "b": "EPYC"}]  # python is shown, not compared


def test_baseline_documents_round_trip_and_bad_ones_are_refused() -> None:
    observations = [observation_figures(_record([0.010 + 0.001 * (i % 2)] * 3)) for i in range(6)]
    document = baseline_document(name="main", script="train.py", argv=["--x"], created_at="now", commit="abc",
                                 dirty=False, env={"cpu": {"model": "Xeon"}}, settings={"steps": 3},
                                 observations=observations)
    assert read_baseline(document, "b") is document
    assert document["noise"] == pytest.approx(0.1)  # alternate observations: 10 ms and 11 ms
    with pytest.raises(ValueError, match="not a torchdoctor check baseline"):
        read_baseline({"kind": "something"}, "b")
    with pytest.raises(ValueError, match="schema_version 99"):
        read_baseline({**document, "schema_version": 99}, "b")
    # A baseline of median steps cannot be compared with the pace: it is recorded again.
    with pytest.raises(ValueError, match="median step.*record the baseline again"):
        read_baseline({**document, "schema_version": 1}, "b")
    with pytest.raises(ValueError, match="no measured observation"):
        read_baseline({**document, "observations": []}, "b")


def test_with_the_model_on_a_device_the_step_is_the_synchronised_window_over_its_steps() -> None:
    record = _record([0.002, 0.002, 0.002, 0.002])  # host times: launches only
    record.summary.window_s = 0.040  # the device finished the window's work 40 ms after it began
    record.env = {"models": [{"parameter_devices": {"cuda": 4}}]}
    figures = observation_figures(record)
    assert figures["clock"] == "window" and figures["step_s"] == pytest.approx(0.010)
    assert figures["sample_s"] == pytest.approx(0.0025) and figures["samples_per_s"] == pytest.approx(400)
    record.env = {"models": [{"parameter_devices": {"cpu": 4}}]}
    assert observation_figures(record)["step_s"] == pytest.approx(0.002)
