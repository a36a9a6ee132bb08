"""The anomaly probe: blocks of the script's own steps with autograd anomaly detection held off
against blocks with it on; the script's mode is back however the probe ends, and its own switches
during the probe leave no trace in the Record's knob interceptions."""

from __future__ import annotations

import pytest
import torch

from torchdoctor.knobs import guard
from torchdoctor.launch import LaunchConfig, ObserveConfig, observe
from torchdoctor.observe.probes.anomaly import AnomalyProbe
from torchdoctor.observe.probes.blocks import BLOCK, ORDER
from torchdoctor.analyse.caveats import machine_load_caveat
from torchdoctor.probe_values import ANOMALY, THREADS
from torchdoctor.rules import diagnose
from torchdoctor.zoo import workload_path


class AnomalyClock:
    """A clock whose steps last `on_ms` with anomaly detection on, `off_ms` with it off."""

    def __init__(self, on_ms: float, off_ms: float) -> None:
        self.on_ms, self.off_ms, self.now_ns = on_ms, off_ms, 0

    def __call__(self) -> int:
        return self.now_ns

    def run_step(self) -> None:
        with torch.autograd.detect_anomaly():  # the script's own switch, each step
            on = torch.is_anomaly_enabled()
        self.now_ns += int((self.on_ms if on else self.off_ms) * 1e6)


@pytest.fixture
def anomaly_on():
    torch.autograd.set_detect_anomaly(True)
    guard.reset()
    yield
    torch.autograd.set_detect_anomaly(False)


def test_the_probe_holds_anomaly_mode_off_against_the_script_and_measures_both_paces(anomaly_on) -> None:
    clock = AnomalyClock(on_ms=30.0, off_ms=20.0)
    probe = AnomalyProbe(clock_ns=clock)
    assert probe.to_dict() is None  # never began
    probe.begin()
    assert not torch.is_anomaly_enabled()
    torch.autograd.set_detect_anomaly(True)  # the script switches it on again: held off
    assert not torch.is_anomaly_enabled()
    done = []
    for _ in range(BLOCK * len(ORDER)):
        clock.run_step()
        done.append(probe.step_end())
    assert done == [False] * (BLOCK * len(ORDER) - 1) + [True]
    assert torch.is_anomaly_enabled()  # the script's mode is back
    result = probe.to_dict()
    assert result["complete"] and result["samples"] == len(ORDER) * (BLOCK - 1)
    assert result["step_s_anomaly_on"] == pytest.approx(0.030) and result["step_s_anomaly_off"] == pytest.approx(0.020)
    assert result["speedup"] == pytest.approx(1.5)
    assert guard.intercepted_calls() == []  # held off by the probe, not by a knob of the run


def test_a_probe_cut_short_gives_the_mode_back_and_claims_no_speedup(anomaly_on) -> None:
    clock = AnomalyClock(on_ms=30.0, off_ms=20.0)
    probe = AnomalyProbe(clock_ns=clock)
    probe.begin()
    for _ in range(BLOCK + 1):
        clock.run_step()
        probe.step_end()
    probe.close("the script ended during the probe: script_finished")
    assert torch.is_anomaly_enabled()
    result = probe.to_dict()
    assert not result["complete"] and result["speedup"] is None and result["reason"].startswith("the script ended")


# -- in a real observation ------------------------------------------------------------------------

FAST = ObserveConfig(warmup_steps=2, timing_steps=6, profile_wait=0, profile_warmup=1, profile_active=1)


def test_anomaly_mode_left_on_is_probed_and_td_comp_007_claims_what_the_probe_measured(tmp_path) -> None:
    record = observe(workload_path("compute_anomaly"), [], FAST, LaunchConfig(timeout_s=300), out_dir=tmp_path)
    assert record.exit.reason == "completed", record.exit
    probe = ANOMALY.of(record)
    assert probe["complete"] and probe["samples"] == len(ORDER) * (BLOCK - 1)
    assert probe["speedup"] == pytest.approx(probe["step_s_anomaly_on"] / probe["step_s_anomaly_off"])
    assert record.env["torch"]["anomaly_detection"]  # the script's own mode at the end
    assert not any(r["knob"] == "no_anomaly_detection" for r in record.env["knob_guard"])
    (finding,) = diagnose(record, select=["TD-COMP-007"]).findings
    assert finding.evidence["upside_basis"] == "measured"
    assert finding.upside == pytest.approx(max(0.0, 1 - 1 / probe["speedup"]), abs=1e-4)
    assert "measured" in finding.explanation
    # The threads probe runs here only beside other processes' material load (TD-COMP-031's case).
    assert THREADS.of(record) is None or machine_load_caveat(record) is not None


def test_without_anomaly_mode_nothing_is_probed(tmp_path) -> None:
    record = observe(workload_path("compute_grad_inference"), [], FAST, LaunchConfig(timeout_s=300), out_dir=tmp_path)
    assert record.exit.reason == "completed" and ANOMALY.of(record) is None
