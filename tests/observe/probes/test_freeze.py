"""The freeze probe: blocks of the script's own steps with the parameters no optimizer holds frozen
against blocks as the script left them; their flags are back however the probe ends."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from torch import nn

from torchdoctor.launch import LaunchConfig, ObserveConfig, observe
from torchdoctor.observe.probes.blocks import BLOCK, ORDER
from torchdoctor.observe.probes.freeze import FreezeProbe
from torchdoctor.probe_values import FREEZE
from torchdoctor.rules import diagnose


class GradClock:
    """A clock whose steps last `with_ms` while the backbone gets gradients, `frozen_ms` while not;
    each step is a real forward and backward of `model`."""

    def __init__(self, model: nn.Sequential, with_ms: float, frozen_ms: float) -> None:
        self.model, self.with_ms, self.frozen_ms, self.now_ns = model, with_ms, frozen_ms, 0

    def __call__(self) -> int:
        return self.now_ns

    def run_step(self) -> None:
        self.model(torch.randn(2, 4)).sum().backward()
        frozen = not self.model[0].weight.requires_grad
        self.now_ns += int((self.frozen_ms if frozen else self.with_ms) * 1e6)


def test_the_probe_freezes_exactly_the_unused_parameters_and_measures_both_paces() -> None:
    model = nn.Sequential(nn.Linear(4, 8), nn.Linear(8, 1))
    backbone = list(model[0].parameters())
    clock = GradClock(model, with_ms=30.0, frozen_ms=10.0)
    probe = FreezeProbe(backbone, clock_ns=clock)
    assert probe.to_dict() is None  # never began
    probe.begin()
    assert not any(p.requires_grad for p in backbone) and model[1].weight.requires_grad
    done = []
    for _ in range(BLOCK * len(ORDER)):
        clock.run_step()
        done.append(probe.step_end())
    assert done == [False] * (BLOCK * len(ORDER) - 1) + [True]
    assert all(p.requires_grad for p in backbone)  # the script's flags are back
    value = probe.to_dict()
    assert value["complete"] and value["tensors"] == 2 and value["parameters"] == 4 * 8 + 8
    assert value["step_s_with_grads"] == pytest.approx(0.030) and value["step_s_frozen"] == pytest.approx(0.010)
    assert value["speedup"] == pytest.approx(3.0)


def test_a_probe_cut_short_gives_the_parameters_back_their_gradients() -> None:
    model = nn.Sequential(nn.Linear(4, 8), nn.Linear(8, 1))
    probe = FreezeProbe(list(model[0].parameters()), clock_ns=GradClock(model, 30.0, 10.0))
    probe.begin()
    probe.close("the script ended during the probe")
    assert all(p.requires_grad for p in model[0].parameters())
    assert probe.to_dict()["complete"] is False


# -- in a real observation ------------------------------------------------------------------------

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "unused_gradients.py"
FAST = ObserveConfig(warmup_steps=2, timing_steps=6, profile_wait=0, profile_warmup=1, profile_active=1)


@pytest.mark.slow
def test_a_backbone_no_optimizer_holds_is_recorded_probed_frozen_and_claimed_as_measured(tmp_path):
    record = observe(SCRIPT, ["120"], FAST, LaunchConfig(timeout_s=300), out_dir=tmp_path)
    assert record.exit.reason == "completed", record.exit
    (model,) = record.env["models"]
    backbone = 64 * 256 + 256 + 256 * 256 + 256
    assert (model["unused_grad_tensors"], model["unused_grad_parameters"]) == (4, backbone)
    probe = FREEZE.of(record)
    assert probe["tensors"] == 4 and probe["parameters"] == backbone
    assert probe["complete"] and probe["samples"] == len(ORDER) * (BLOCK - 1), probe
    findings = diagnose(record, select=["TD-COMP-042"]).findings
    if probe["verdict"] == "faster" and probe["speedup"] >= 1 / 0.95:
        (finding,) = findings
        assert finding.evidence["upside_basis"] == "measured"
        assert finding.upside == pytest.approx(1 - 1 / probe["speedup"], abs=1e-4)
    else:  # freezing measured no clear gain in this run (a busy machine): no finding
        assert findings == []
