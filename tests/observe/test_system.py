"""System metrics: summaries over the timing window, and GPU columns over the devices in use."""

from __future__ import annotations

import math

import pytest

from torchdoctor.observe import system
from torchdoctor.observe.system import SystemSampler, summarise


def test_the_summary_covers_the_timing_window_only():
    columns = {name: [0.0] * 4 for name in SystemSampler.COLUMNS}
    columns.update(t_s=[0.1, 0.2, 0.3, 0.4], process_cpu_percent=[10.0, 90.0, 110.0, 5.0],
                   machine_cpu_percent=[1.0, 2.0, 3.0, 4.0], gpu_util_percent=[math.nan] * 4,
                   gpu_memory_bytes=[math.nan] * 4, disk_read_bytes=[0.0, 100.0, 300.0, 0.0])
    out = summarise(columns, (0.15, 0.35), interval_s=0.1)
    assert out["over"] == "window" and out["num_samples"] == 2
    assert out["process_cpu_percent_mean"] == pytest.approx(100.0)
    assert out["disk_read_bytes_per_s"] == pytest.approx(400.0 / 0.2)
    assert out["gpu_util_percent_mean"] is None  # no GPU sampled


class FakeNvml:
    """Stands in for NVML on this CPU-only machine: three GPUs, one of them ours."""

    handles = [0, 1, 2]
    uuids = ["aaa", "bbb", "ccc"]


def test_gpu_figures_count_only_the_devices_this_process_used(monkeypatch):
    sampler = SystemSampler(0.1)
    sampler._nvml = FakeNvml()
    sampler._gpu_rows = [[(0.0, 1.0), (80.0, 5.0), (100.0, 7.0)], [(0.0, 1.0), (60.0, 6.0), (100.0, 7.0)]]
    monkeypatch.setattr(system, "devices_in_use", lambda: {"bbb"})
    assert sampler._gpu_columns() == ["bbb"]
    assert sampler.columns["gpu_util_percent"] == [80.0, 60.0]
    assert sampler.columns["gpu_memory_bytes"] == [5.0, 6.0]


def test_uuids_from_nvml_and_torch_compare_equal():
    assert system._uuid_key(b"GPU-5F1D-00") == system._uuid_key("5f1d-00")


def test_other_processes_cores_over_the_window_are_the_machine_less_the_process_tree():
    """What the threads probe reads in the observed process, and the diagnosis from the Record's
    summary (environment.system.other_cores): the same window's samples."""
    sampler = SystemSampler(0.1)
    sampler.logical_cores = 2
    assert sampler.window_other_cpu_cores() is None  # before the window ended
    sampler.columns.update(t_s=[0.1, 0.2, 0.3], machine_cpu_percent=[10.0, 100.0, 100.0],
                           process_cpu_percent=[20.0, 80.0, 100.0])
    sampler.window = (0.15, 0.35)
    assert sampler.window_other_cpu_cores() == pytest.approx(2 * 1.0 - 0.9)


def test_a_window_shorter_than_the_interval_still_has_a_sample_after_it_when_the_run_stops():
    sampler = SystemSampler(60.0)  # no sample of its own before the stop
    sampler.start()
    sampler.mark_window_start()
    sampler.mark_window_end()
    sampler.stop()
    t = sampler.columns["t_s"][-1]
    assert t >= sampler.window[1] and sampler.columns["rss_bytes"][-1] > 0


def test_a_window_shorter_than_the_interval_gets_a_sample_of_its_own():
    sampler = SystemSampler(60.0)
    sampler.start()
    sampler.mark_window_start()
    sampler.mark_window_end()
    (t,) = sampler.columns["t_s"]
    assert sampler.window[0] <= t <= sampler.window[1]
    assert sampler.window_other_cpu_cores() is not None  # read from the window's own sample
    sampler.stop()
    assert sampler.to_dict()["summary"]["num_samples"] == 1  # the stop's last sample is after the window
