"""The Lightning callback gives the Record `diagnose` gives: steps from the optimizer (training_step
runs inside its closure), shares adding to 1, a known sleep in the part that holds it; and
`diagnose` of the same script, unmodified, agrees."""

from __future__ import annotations

from dataclasses import replace

import pytest

from tests.field.helpers import SCRIPTS, assert_shares_add_up, assert_sleep_in, diagnose, load_script
from tests.integrations.conftest import TIMING_STEPS
from torchdoctor.goodput import WholeRun



@pytest.fixture(scope="module")
def callback_type() -> type:
    """The callback class, imported when a test first needs it: lightning takes seconds to import,
    which every test process would otherwise pay merely to collect the suite."""
    pytest.importorskip("lightning")
    from torchdoctor.integrations.lightning import TorchDoctorCallback

    return TorchDoctorCallback

SLEEP_S = 0.05


@pytest.mark.parametrize("part", ["forward", "backward", "data_wait"])
def test_the_callback_records_steps_whose_shares_add_up_with_the_sleep_in_its_part(callback_type, part, observe_config,
                                                                                 outputs):
    callback = callback_type(observe_config, outputs)
    sleep_in = "data" if part == "data_wait" else part
    load_script("lightning_module").main(["--steps", "12", "--sleep-in", sleep_in, "--sleep-s", str(SLEEP_S)],
                                         callbacks=[callback])
    record = callback.record
    assert record is not None and record.exit.reason == "completed", record and record.exit
    assert record.step_detection == "optimizer"
    assert record.summary.num_steps == TIMING_STEPS
    assert record.config["integration"] == "lightning"
    assert record.env["dataloaders"][0]["dataset_type"] == "Points"
    assert_shares_add_up(record)
    assert_sleep_in(record, part, SLEEP_S)


def test_a_fit_shorter_than_the_windows_ends_the_observation_with_the_fit(callback_type, observe_config, outputs):
    callback = callback_type(observe_config, outputs)
    load_script("lightning_module").main(["--steps", "4"], callbacks=[callback])
    assert callback.record is not None and callback.record.exit.reason == "script_finished"
    assert not callback.observation.active


@pytest.mark.slow
def test_zero_edit_diagnose_of_the_same_script_detects_steps_and_adds_up(tmp_path):
    proc, record = diagnose(tmp_path, SCRIPTS / "lightning_module.py",
                            ["--steps", "12", "--sleep-in", "forward", "--sleep-s", str(SLEEP_S)],
                            ["--no-profile", "--no-memory", "--warmup-steps", "2", "--steps", "5"])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert record is not None and record.step_detection == "optimizer"
    assert record.summary.num_steps == 5
    assert_shares_add_up(record)
    assert_sleep_in(record, "forward", SLEEP_S)


def test_with_watch_on_the_callback_follows_the_whole_fit_and_breaks_its_wall_time_down(callback_type, observe_config,
                                                                                         outputs):
    callback = callback_type(replace(observe_config, watch_profile_every_s=0), outputs, watch=True)
    load_script("lightning_module").main(["--steps", "40"], callbacks=[callback])
    record = callback.record
    assert record is not None and not callback.observation.active
    assert record.summary.num_steps == TIMING_STEPS  # the windows' diagnosis, as without watch
    whole = WholeRun.from_dict(record.whole_run)
    assert whole.ended == "script_finished" and whole.steps == 40  # every step of the fit, not only the windows'
    assert sum(p.seconds for p in whole.parts) == pytest.approx(whole.wall_s, rel=1e-6)
    assert whole.parts[0].kind == "startup" and whole.parts[0].seconds > 0  # the process's start to the fit's
    assert "Whole run" in outputs.console.file.getvalue()
