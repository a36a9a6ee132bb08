"""The periodic profiler windows of the lean observation (observe.periodic), with a real
torch.profiler in this process: a window profiles a few steps at the first step after it is
armed, then again once its period has passed; each writes its operators and the steps it
touched to the stream."""

from __future__ import annotations

import time

import pytest
import torch

from torchdoctor.goodput import read_watch
from torchdoctor.observe.periodic import PeriodicProfiler, operator_times
from torchdoctor.observe.watch import RunWatch


@pytest.fixture(scope="module", autouse=True)
def _profiler_loaded():
    """The detailed profiler window at the start has loaded the profiler (seconds, once) before
    the periodic windows open."""
    with torch.profiler.profile():
        torch.mm(torch.ones(2, 2), torch.ones(2, 2))


def _run_steps(watch: RunWatch, seconds: float) -> None:
    a = torch.randn(64, 64)
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        torch.mm(a, a)
        time.sleep(0.002)
        watch.step()


def test_windows_repeat_with_their_period_and_name_the_operators_of_the_steps_they_profiled(tmp_path):
    watch = RunWatch(str(tmp_path), 0, sample_interval_s=0.01, raw_steps=10_000, max_bytes=2**20)
    watch.start()
    periodic = PeriodicProfiler(watch, steps=3)
    watch.schedule(0.4, periodic.begin)
    _run_steps(watch, 1.5)
    periodic.close()
    watch.finish("script_finished")
    run = read_watch(tmp_path / "rank0.watch.jsonl")
    assert 2 <= len(run.profiled) <= 4  # the first at once, then one every 0.4 s and its steps
    first, second = run.profiled[0], run.profiled[1]
    # The sampling thread arms the first window within its 10 ms interval: a step or two on a quiet
    # machine, a few more on a loaded one (step 3 was seen in CI).
    assert first[0] <= 10 and first[1] - first[0] == 4  # a warm-up step, 3 steps profiled, the 5th stopped it
    assert second[0] > first[1]
    window, later = run.profiles[0], run.profiles[1]
    assert later.t_s - window.t_s >= 0.4  # none within the period
    assert window.clock == "cpu" and window.steps == 3
    assert "aten::mm" in [op.name for op in window.ops]
    assert sum(op.share for op in window.ops) <= 1.0 + 1e-6


def test_no_window_opens_once_the_watch_is_unscheduled(tmp_path):
    watch = RunWatch(str(tmp_path), 0, sample_interval_s=0.01, raw_steps=10_000, max_bytes=2**20)
    watch.start()
    periodic = PeriodicProfiler(watch, steps=3)
    watch.schedule(0.1, periodic.begin)
    periodic.close()
    _run_steps(watch, 0.4)
    watch.finish("script_finished")
    assert read_watch(tmp_path / "rank0.watch.jsonl").profiled == []


def test_operator_times_take_the_device_clock_where_the_device_was_profiled():
    class Avg:
        def __init__(self, key, cpu, device):
            self.key, self.self_cpu_time_total, self.self_device_time_total = key, cpu, device

    clock, total, ops = operator_times([Avg("aten::mm", 10.0, 300.0), Avg("aten::add", 50.0, 100.0),
                                        Avg("aten::copy_", 5.0, 0.0)], top=1)
    assert (clock, total, ops) == ("device", 400.0, [["aten::mm", 300.0]])
    clock, total, ops = operator_times([Avg("aten::mm", 10.0, 0.0), Avg("aten::add", 50.0, 0.0)], top=5)
    assert (clock, total, ops) == ("cpu", 60.0, [["aten::add", 50.0], ["aten::mm", 10.0]])


def test_the_written_total_is_never_less_than_the_written_operator_times():
    class Avg:
        def __init__(self, key, cpu):
            self.key, self.self_cpu_time_total, self.self_device_time_total = key, cpu, 0.0

    # Each time rounds up by 0.04 µs: a total rounded on its own would be 0.2 µs short of its parts.
    _, total, ops = operator_times([Avg(f"aten::op{i}", 10.06) for i in range(5)], top=5)
    assert sum(us for _, us in ops) <= total
