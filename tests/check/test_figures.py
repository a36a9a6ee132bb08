"""What the gate keeps of one observation (its pace) and of its machine (the fingerprint)."""

from __future__ import annotations

import pytest

from torchdoctor.check.figures import fingerprint, fingerprint_differences, observation_figures
from torchdoctor.environment import Environment
from torchdoctor.record import Record
from tests.check.values import record


def test_observation_figures() -> None:
    figures = observation_figures(record([0.010, 0.012, 0.011], forward=0.004, peak=1000))
    assert figures["step_s"] == pytest.approx(0.011) and figures["clock"] == "mean step"
    assert figures["sample_s"] == pytest.approx(0.011 / 4) and figures["batch_size"] == 4
    assert figures["phases"]["forward"] == pytest.approx(0.004)
    assert figures["phases"]["other"] == pytest.approx(0.011 - 0.004)
    assert figures["peak_bytes"] == 1000 and figures["compile_s"] is None
    assert observation_figures(Record())["step_s"] is None


def test_an_observation_is_judged_by_its_pace_so_a_cost_paid_every_few_steps_counts() -> None:
    # A checkpoint every 5th step: the median step is unchanged, training is 40% slower.
    plain = observation_figures(record([0.010] * 10))
    every_fifth = observation_figures(record([0.010, 0.010, 0.010, 0.010, 0.030] * 2))
    assert every_fifth["step_s"] / plain["step_s"] == pytest.approx(1.4)
    assert every_fifth["sample_s"] / plain["sample_s"] == pytest.approx(1.4)
    assert plain["samples_per_s"] / every_fifth["samples_per_s"] == pytest.approx(1.4)
    assert sum(every_fifth["phases"].values()) == pytest.approx(every_fifth["step_s"])


def test_with_the_model_on_a_device_the_step_is_the_synchronised_window_over_its_steps() -> None:
    observed = record([0.002, 0.002, 0.002, 0.002])  # host times: launches only
    observed.summary.window_s = 0.040  # the device finished the window's work 40 ms after it began
    observed.env = {"models": [{"parameter_devices": {"cuda": 4}}]}
    figures = observation_figures(observed)
    assert figures["clock"] == "window" and figures["step_s"] == pytest.approx(0.010)
    assert figures["sample_s"] == pytest.approx(0.0025) and figures["samples_per_s"] == pytest.approx(400)
    observed.env = {"models": [{"parameter_devices": {"cpu": 4}}]}
    assert observation_figures(observed)["step_s"] == pytest.approx(0.002)



def test_fingerprints_compare_the_machine_and_the_software() -> None:
    env = {"versions": {"torch": "2.13.0", "cuda": None, "hip": None, "python": "3.11.7"},
           "cpu": {"model": "Xeon", "logical_cores": 2}, "devices": {"gpus": []}}
    other = {**env, "cpu": {"model": "EPYC", "logical_cores": 2}, "versions": {**env["versions"], "python": "3.12"}}
    differences = fingerprint_differences(fingerprint(Environment.from_dict(env)),
                                          fingerprint(Environment.from_dict(other)))
    assert differences == [{"key": "cpu_model", "a": "Xeon", "b": "EPYC"}]  # python is shown, not compared
