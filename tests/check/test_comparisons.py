"""Metrics from the samples and figures of both sides: gated at their thresholds, worse or better."""

from __future__ import annotations

import pytest

from torchdoctor.bench import SLOWER
from torchdoctor.check.comparisons import compare_figures, metric_from_verdict
from torchdoctor.check.config import DEFAULT_POLICY
from torchdoctor.check.decisions import PASS, REGRESSION, UNDECIDED
from torchdoctor.check.gate import GateLook
from torchdoctor.check.metric import COMPILE_TIME, PEAK_MEMORY, SAMPLES_PER_S, STEP_TIME
from torchdoctor.check.reason import reason_for
from tests.check.values import verdict


def test_a_regression_needs_the_estimate_beyond_the_threshold() -> None:
    # Significantly slower by 3%: a real slowdown, but within the allowed 5%.
    metric = metric_from_verdict(STEP_TIME, verdict(1.03, 1.021, 1.06, SLOWER), [1.0] * 8, [1.03] * 8,
                                 GateLook(max_slowdown=0.05))
    assert metric.gate == PASS and metric.verdict == "worse"
    reason = reason_for(PASS, [metric], stop_reason="max_rounds", rounds=40, budget_s=300)
    assert "within the allowed +5.0%" in reason and "slower, but within" in reason


def test_memory_gates_on_its_own_threshold() -> None:
    grown = compare_figures(PEAK_MEMORY, [100e6] * 6, [125e6] * 5, DEFAULT_POLICY, threshold=0.10)
    assert grown is not None and grown.gate == REGRESSION and grown.change == pytest.approx(0.25)
    same = compare_figures(PEAK_MEMORY, [100e6] * 6, [104e6] * 5, DEFAULT_POLICY, threshold=0.10)
    assert same is not None and same.gate == PASS
    few = compare_figures(PEAK_MEMORY, [100e6] * 2, [150e6] * 2, DEFAULT_POLICY, threshold=0.10)
    assert few is not None and few.gate == UNDECIDED
    assert compare_figures(COMPILE_TIME, [None, 0], [None], DEFAULT_POLICY) is None


def test_samples_per_s_is_worse_when_lower() -> None:
    metric = compare_figures(SAMPLES_PER_S, [100.0] * 8, [70.0] * 8, DEFAULT_POLICY)
    assert metric is not None and metric.verdict == "worse" and metric.gate is None
