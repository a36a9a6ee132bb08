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


def test_a_deterministic_script_is_compared_step_by_step_and_says_so() -> None:
    from torchdoctor.tune.numerics import LOSS_STEPS

    moved_once = list(BASE)
    moved_once[3] *= 1.01  # one step off by 1%: the window mean moves only 0.1%
    result = check_losses(BASE, moved_once, 5e-3, step_by_step=True)
    assert not result.ok and result.method == LOSS_STEPS and math.isclose(result.difference, 0.01, rel_tol=1e-6)
    assert check_losses(BASE, moved_once, 5e-3).ok  # the window mean alone would let it pass


def test_knobs_that_change_the_data_stream_get_the_tolerance_other_batches_alone_would_need() -> None:
    from torchdoctor.tune.numerics import sampling_tolerance

    tolerance = sampling_tolerance(BASE)
    assert 0.05 < tolerance < 0.5  # 3 x sqrt(2) x std / sqrt(8) / mean of a falling loss
    assert sampling_tolerance([1.0] * 10) == 0.0


def _calls(samples, inputs, argmax=None):
    import torch

    return [{"sample": torch.tensor(s, dtype=torch.float32), "input": torch.tensor(i), "shape": [len(s)],
             "mean": float(sum(s) / len(s)), "std": float(torch.tensor(s).std()),
             **({"argmax": torch.tensor(a)} if argmax else {})}
            for s, i, a in zip(samples, inputs, argmax or [None] * len(samples))]


def test_outputs_on_the_same_inputs_are_compared_element_wise_with_argmax_agreement() -> None:
    from torchdoctor.tune.numerics import OUTPUTS_ELEMENTWISE, check_outputs

    base = _calls([[1.0, 2.0, 3.0, 4.0]] * 3, [[1, 2]] * 3, [[0, 1, 2, 3]] * 3)
    close = _calls([[1.0, 2.0, 3.0, 4.004]] * 3, [[1, 2]] * 3, [[0, 1, 2, 3]] * 3)
    result = check_outputs(base, close, 1e-2, min_agreement=0.9)
    assert result.ok and result.checked and result.method == OUTPUTS_ELEMENTWISE
    assert 0 < result.difference < 1e-3 and result.argmax_agreement == 1.0
    flipped = _calls([[1.0, 2.0, 3.0, 4.004]] * 3, [[1, 2]] * 3, [[0, 1, 3, 2]] * 3)
    assert not check_outputs(base, flipped, 1e-2, min_agreement=0.9).ok  # half the rows' argmax moved
    assert not check_outputs(base, close, 1e-4, min_agreement=0.9).ok  # beyond a tight tolerance


def test_outputs_on_other_inputs_are_compared_by_their_distribution() -> None:
    from torchdoctor.tune.numerics import OUTPUTS_DISTRIBUTION, check_outputs

    base = _calls([[1.0, 2.0, 3.0, 4.0]] * 3, [[1, 2], [3, 4], [5, 6]])
    other = _calls([[1.1, 2.0, 3.0, 3.9]] * 3, [[7, 8], [9, 9], [9, 1]])
    result = check_outputs(base, other, 1e-1, min_agreement=0.9)
    assert result.ok and result.method == OUTPUTS_DISTRIBUTION and "inputs differ" in result.reason
    shifted = _calls([[3.0, 4.0, 5.0, 6.0]] * 3, [[7, 8], [9, 9], [9, 1]])
    assert not check_outputs(base, shifted, 1e-1, min_agreement=0.9).ok


def test_non_finite_outputs_reject_and_no_outputs_are_unchecked() -> None:
    from torchdoctor.tune.numerics import check_outputs

    base = _calls([[1.0, 2.0]], [[1]])
    assert not check_outputs(base, _calls([[1.0, math.nan]], [[1]]), 1.0, min_agreement=0.0).ok
    unchecked = check_outputs(None, base, 1e-3, min_agreement=0.9)
    assert unchecked.ok and not unchecked.checked and "not checked" in unchecked.reason
