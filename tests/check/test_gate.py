"""The gate's answer on a step-time Verdict, its stopping rule and the check's decision."""

from __future__ import annotations

import math

import pytest

from torchdoctor.bench import SLOWER, TOO_FEW, Verdict
from torchdoctor.check.decisions import PASS, REGRESSION, UNDECIDED
from torchdoctor.check.gate import decide, gate_settled, pass_bound, time_gate
from torchdoctor.check.metric import Metric
from tests.check.values import verdict


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


def test_a_check_as_noisy_as_the_threshold_passes_nothing_before_the_last_look() -> None:
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


def test_decide_takes_the_worst_gate() -> None:
    def gated(gate: str | None) -> Metric:
        return Metric("m", "m", "s", "lower", gate=gate)

    assert decide([gated(PASS), gated(REGRESSION)]) == REGRESSION
    assert decide([gated(PASS), gated(UNDECIDED), gated(None)]) == UNDECIDED
    assert decide([gated(PASS), gated(None)]) == PASS
    assert decide([gated(None)]) == UNDECIDED
