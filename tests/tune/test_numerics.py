"""The numerics check: smoothed loss within the knob's tolerance; NaN and divergence reject."""

from __future__ import annotations

import math

from torchdoctor.tune.numerics import check_losses

BASE = [2.0, 1.8, 1.6, 1.5, 1.4, 1.3, 1.2, 1.1]


def test_identical_losses_pass_with_zero_difference() -> None:
    result = check_losses(BASE, list(BASE), 1e-3)
    assert result.ok and result.checked and result.difference == 0.0


def test_a_shift_beyond_the_tolerance_is_rejected_and_reported() -> None:
    result = check_losses(BASE, [v * 1.05 for v in BASE], 1e-2)
    assert not result.ok
    assert math.isclose(result.difference, 0.05, rel_tol=1e-6)
    assert "5.00%" in result.reason


def test_the_same_shift_passes_a_precision_knobs_wider_tolerance() -> None:
    assert check_losses(BASE, [v * 1.01 for v in BASE], 5e-2).ok


def test_nan_and_divergence_reject_whatever_the_tolerance() -> None:
    assert not check_losses(BASE, BASE[:-1] + [math.nan], math.inf).ok
    diverged = check_losses(BASE, BASE[:4] + [5.0, 9.0, 20.0, 40.0], math.inf)
    assert not diverged.ok and "diverged" in diverged.reason


def test_no_loss_is_reported_as_unchecked_not_as_passed_silently() -> None:
    result = check_losses([None] * 3, [None] * 3, 1e-3)
    assert result.ok and not result.checked and "not checked" in result.reason
