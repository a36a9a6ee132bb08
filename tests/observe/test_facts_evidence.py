"""The facts the extended rules read: layer shapes, data-wait CPU time, the script's own debug
tools and gradcheck calls, all measured in process with the real hooks."""

from __future__ import annotations

import time

import torch
from torch.utils.data import DataLoader, Dataset

from torchdoctor.observe.facts import Facts, layer_shapes, script_tools
from torchdoctor.observe.hooks import Instrumentation
from torchdoctor.observe.steps import PhaseCallbacks, StepClock


class _Sleepy(Dataset):
    """Each sample waits on 'storage' (a 20 ms sleep) with the CPU idle, or burns 2 ms of CPU. The
    sleep is long against the loader's own CPU work around it (a few hundred us per batch), so an
    idle wait's CPU share stays near 0 however slowly a loaded host runs that work."""

    def __init__(self, busy: bool) -> None:
        self.busy = busy

    def __len__(self) -> int:
        return 64

    def __getitem__(self, i: int) -> torch.Tensor:
        end = time.thread_time() + 0.002  # 2 ms of CPU, however long a loaded host makes it take
        while self.busy and time.thread_time() < end:
            pass
        if not self.busy:
            time.sleep(0.02)
        return torch.zeros(4)


def _data_cpu_share(busy: bool) -> float:
    noop = lambda *args: None  # noqa: E731
    clock = StepClock(1, 3, 0, PhaseCallbacks(noop, noop, noop, noop, noop, noop))
    hooks = Instrumentation(clock, Facts())
    hooks.install()
    try:
        model = torch.nn.Linear(4, 1)
        for x in DataLoader(_Sleepy(busy), batch_size=4):
            model(x)
    finally:
        hooks.uninstall()
    waits = sum(p.data_ns for _, p in clock.samples)
    return sum(p.data_cpu_ns for _, p in clock.samples) / waits


def test_data_wait_cpu_time_tells_an_idle_wait_from_a_busy_one():
    idle, busy = _data_cpu_share(busy=False), _data_cpu_share(busy=True)
    # 2 ms of CPU take longer on a shared core, so the busy share falls as the host's load rises
    # (0.11 measured at a load average of 10 on 2 cores): it is judged against the idle share
    # (well under 1 %), not against a fixed figure.
    assert idle < 0.2 and busy > 4 * idle, (idle, busy)


def test_layer_shapes_lists_each_distinct_linear_and_conv_shape_once_with_its_count():
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 30, 3), torch.nn.Flatten(), torch.nn.Linear(100, 30),
                                torch.nn.Linear(100, 30), torch.nn.Linear(30, 8).half())
    shapes = layer_shapes(model)
    assert {"type": "Linear", "in_features": 100, "out_features": 30, "dtype": "float32", "count": 2} in shapes
    assert {"type": "Linear", "in_features": 30, "out_features": 8, "dtype": "float16", "count": 1} in shapes
    assert {"type": "Conv2d", "in_channels": 3, "out_channels": 30, "dtype": "float32", "count": 1} in shapes
    assert len(shapes) == 3


def test_script_tools_sees_the_scripts_own_profiler_and_anomaly_mode():
    assert script_tools() == {"profiler_enabled": False, "anomaly_detection": False}
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]):
        with torch.autograd.detect_anomaly():
            assert script_tools() == {"profiler_enabled": True, "anomaly_detection": True}


def test_gradcheck_calls_in_the_timing_window_are_counted_and_timed():
    noop = lambda *args: None  # noqa: E731
    facts = Facts()
    hooks = Instrumentation(StepClock(1, 3, 0, PhaseCallbacks(noop, noop, noop, noop, noop, noop)), facts)
    hooks.install()
    try:
        x = torch.randn(3, dtype=torch.double, requires_grad=True)
        torch.autograd.gradcheck(torch.sin, (x,))  # before the window: not counted
        facts.note_window_start()
        torch.autograd.gradcheck(torch.sin, (x,))
        torch.autograd.gradgradcheck(torch.sin, (x,))
        facts.note_window_end()
    finally:
        hooks.uninstall()
    assert facts.script_tools["gradcheck_calls"] == 2 and facts.script_tools["gradcheck_s"] > 0
    assert not hasattr(torch.autograd.gradcheck, "__wrapped__")  # uninstall restored the original


def test_torch_save_calls_in_the_timing_window_are_counted_and_timed(tmp_path):
    noop = lambda *args: None  # noqa: E731
    facts = Facts()
    hooks = Instrumentation(StepClock(1, 3, 0, PhaseCallbacks(noop, noop, noop, noop, noop, noop)), facts)
    hooks.install()
    try:
        state = {"w": torch.randn(256, 256)}
        torch.save(state, tmp_path / "before.pt")  # before the window: not counted
        facts.note_window_start()
        torch.save(state, tmp_path / "a.pt")
        torch.save(state, tmp_path / "b.pt")
        facts.note_window_end()
    finally:
        hooks.uninstall()
    assert facts.script_tools["save_calls"] == 2 and facts.script_tools["save_s"] > 0
    assert torch.load(tmp_path / "b.pt")["w"].shape == (256, 256)  # the save itself is unchanged
    assert not hasattr(torch.save, "__wrapped__")
