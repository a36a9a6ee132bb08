"""The Hugging Face TrainerCallback gives the Record `diagnose` gives, on a tiny GPT-2 built from a
config: steps from the (Accelerate-wrapped) optimizer, shares adding to 1, a known sleep in the
part that holds it; and `diagnose` of the same script, unmodified, agrees."""

from __future__ import annotations

import pytest

from tests.field.helpers import SCRIPTS, assert_shares_add_up, assert_sleep_in, diagnose, load_script
from tests.integrations.conftest import TIMING_STEPS



@pytest.fixture(scope="module")
def callback_type() -> type:
    """The callback class, imported when a test first needs it: transformers takes seconds to import,
    which every test process would otherwise pay merely to collect the suite."""
    pytest.importorskip("transformers")
    from torchdoctor.integrations.huggingface import TorchDoctorCallback

    return TorchDoctorCallback

SLEEP_S = 0.1  # the Trainer's own parts take tens of ms on a busy shared core


@pytest.mark.parametrize("part", ["forward", "backward", "data_wait"])
def test_the_callback_records_steps_whose_shares_add_up_with_the_sleep_in_its_part(callback_type, part, observe_config,
                                                                                 outputs):
    callback = callback_type(observe_config, outputs)
    sleep_in = "data" if part == "data_wait" else part
    load_script("hf_trainer_gpt2").main(["--steps", "12", "--sleep-in", sleep_in, "--sleep-s", str(SLEEP_S)],
                                        callbacks=[callback])
    record = callback.record
    assert record is not None and record.exit.reason == "completed", record and record.exit
    assert record.step_detection == "optimizer"
    assert record.summary.num_steps == TIMING_STEPS
    assert record.config["integration"] == "huggingface"
    assert record.env["dataloaders"][0]["dataset_type"] == "Tokens"
    assert_shares_add_up(record)
    assert_sleep_in(record, part, SLEEP_S)


@pytest.mark.slow
def test_zero_edit_diagnose_of_the_same_script_detects_steps_and_adds_up(tmp_path):
    proc, record = diagnose(tmp_path, SCRIPTS / "hf_trainer_gpt2.py",
                            ["--steps", "12", "--sleep-in", "backward", "--sleep-s", str(SLEEP_S)],
                            ["--no-profile", "--no-memory", "--warmup-steps", "2", "--steps", "5"])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert record is not None and record.step_detection == "optimizer"
    assert record.summary.num_steps == 5
    assert_shares_add_up(record)
    assert_sleep_in(record, "backward", SLEEP_S)
