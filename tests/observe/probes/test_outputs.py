"""OutputCapture: what tune's numerics check samples from the outermost module's outputs."""

from __future__ import annotations

import warnings

import pytest
import torch

from torchdoctor.observe.probes.outputs import OutputCapture


def test_a_model_that_returns_its_loss_is_sampled_without_a_warning_in_the_users_output() -> None:
    # nanoGPT and Hugging Face models given targets return one number: its sample std is undefined,
    # and torch warned into the script's stderr on every captured step (a GPT tuned on a GPU).
    capture = OutputCapture()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        capture.note_output(torch.tensor(2.5))
    [call] = capture.calls
    assert call["shape"] == [] and float(call["mean"]) == 2.5 and float(call["std"]) == 0.0
    assert "argmax" not in call


def test_logits_are_sampled_with_their_spread_and_argmax() -> None:
    capture = OutputCapture()
    logits = torch.tensor([[0.0, 3.0, 1.0], [2.0, 0.0, 1.0]])
    capture.note_output(logits)
    [call] = capture.calls
    assert call["shape"] == [2, 3] and call["argmax"].tolist() == [1, 0]
    assert float(call["std"]) == pytest.approx(float(logits.std()))
