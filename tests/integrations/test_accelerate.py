"""The Accelerate hook gives the Record `diagnose` gives on a hand-written Accelerate loop: steps
from the wrapped optimizer (one per optimisation step under gradient accumulation), shares adding
to 1, a known sleep in the part that holds it; an exception in the loop still ends the observation."""

from __future__ import annotations

import time

import pytest
import torch
from torch.utils.data import DataLoader, TensorDataset

from tests.field.helpers import assert_shares_add_up, assert_sleep_in
from tests.integrations.conftest import TIMING_STEPS

accelerate = pytest.importorskip("accelerate")
from torchdoctor.integrations.accelerate import TorchDoctorHook  # noqa: E402

SLEEP_S = 0.05


def _train(hook: TorchDoctorHook, *, steps: int, accumulate: int = 1, fail_at: int | None = None) -> None:
    """The loop of Accelerate's examples, with a forward that sleeps SLEEP_S per optimisation step."""
    torch.manual_seed(0)
    accelerator = accelerate.Accelerator(cpu=True, gradient_accumulation_steps=accumulate)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 1))
    model[0].register_forward_pre_hook(lambda module, inputs: time.sleep(SLEEP_S / accumulate))
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    loader = DataLoader(TensorDataset(torch.randn(steps * accumulate * 8, 16), torch.randn(steps * accumulate * 8, 1)),
                        batch_size=8)
    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
    hook.loaders = [loader]
    with hook:
        for index, (x, y) in enumerate(loader):
            if index == fail_at:
                raise RuntimeError("the loop failed")
            with accelerator.accumulate(model):
                accelerator.backward(torch.nn.functional.mse_loss(model(x), y))
                optimizer.step()
                optimizer.zero_grad()
            hook.poll()


@pytest.mark.parametrize("accumulate", [1, 4])
def test_the_hook_records_optimisation_steps_whose_shares_add_up(accumulate, observe_config, outputs):
    hook = TorchDoctorHook(config=observe_config, outputs=outputs)
    _train(hook, steps=12, accumulate=accumulate)
    record = hook.record
    assert record is not None and record.exit.reason == "completed", record and record.exit
    assert record.step_detection == "optimizer"
    assert record.summary.num_steps == TIMING_STEPS
    assert record.config["integration"] == "accelerate"
    assert record.env["dataloaders"][0]["dataset_type"] == "TensorDataset"
    assert_shares_add_up(record)
    assert_sleep_in(record, "forward", SLEEP_S)


def test_an_exception_in_the_loop_ends_the_observation_with_the_script_error(observe_config, outputs):
    hook = TorchDoctorHook(config=observe_config, outputs=outputs)
    with pytest.raises(RuntimeError, match="the loop failed"):
        _train(hook, steps=12, fail_at=4)
    assert hook.record is not None and hook.record.exit.reason == "script_error"
    assert "the loop failed" in hook.record.exit.traceback
