"""Output comparison against eager: definitions of the errors and of top-1 agreement."""

from __future__ import annotations

import pytest
import torch

from torchdoctor.infer.accuracy import compare_outputs, tolerance_violation


def test_relative_error_is_against_the_largest_reference_magnitude() -> None:
    ref = torch.tensor([[4.0, 0.0], [1.0, 2.0]])
    acc = compare_outputs(ref, ref + torch.tensor([[0.0, 0.4], [0.0, 0.0]]))
    assert acc.max_abs_error == pytest.approx(0.4)
    assert acc.max_rel_error == pytest.approx(0.1)
    assert acc.top1_agreement == 1.0


def test_top1_agreement_counts_rows_whose_argmax_moved() -> None:
    ref = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    assert compare_outputs(ref, torch.tensor([[1.0, 0.0], [1.0, 0.0]])).top1_agreement == 0.5


def test_a_shape_change_is_an_error_not_a_number() -> None:
    with pytest.raises(ValueError, match="differs from eager"):
        compare_outputs(torch.zeros(2, 3), torch.zeros(2, 4))


def test_tolerance_names_the_limit_that_was_broken() -> None:
    acc = compare_outputs(torch.tensor([[1.0, 0.0]]), torch.tensor([[0.0, 1.0]]))
    assert "exceeds the tolerance 0.5" in tolerance_violation(acc, 0.5, 0.0)
    assert "top-1 agreement 0.000 is below 0.9" in tolerance_violation(acc, 2.0, 0.9)
    assert tolerance_violation(acc, 2.0, 0.0) is None
