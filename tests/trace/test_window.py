"""The window (trace/analyses/window.py): steps extended to their device work, device idle time
attributed to data, sync, host or device, and windows whose utilisation means nothing named."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import pytest

from torchdoctor.record import Record
from torchdoctor.rules import diagnose_record
from torchdoctor.trace import analyse_traces

CORR = iter(range(1, 10_000))


def _op(name: str, ts: float, dur: float, cat: str = "cpu_op", **args: Any) -> dict[str, Any]:
    return {"ph": "X", "cat": cat, "name": name, "pid": 1, "tid": 1, "ts": ts, "dur": dur, "args": args}


def _kernel(launch_ts: float, ts: float, dur: float, name: str = "k", launch: str = "cudaLaunchKernel") -> list[dict[str, Any]]:
    """A runtime launch call at `launch_ts` and the kernel it queued, joined by a correlation id."""
    corr = next(CORR)
    return [_op(launch, launch_ts, 2, "cuda_runtime", correlation=corr),
            {"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": 7, "ts": ts, "dur": dur,
             "args": {"correlation": corr, "stream": 7, "device": 0}}]


def _analyse(tmp_path: Path, events: list[dict[str, Any]], **meta: Any) -> dict[str, Any]:
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"traceEvents": events, **meta}))
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        return analyse_traces([path]).to_dict()


def test_idle_is_attributed_to_data_sync_host_and_device(tmp_path: Path) -> None:
    events = [_op("ProfilerStep#1", 0, 400, "user_annotation")]
    events += _kernel(0, 5, 10)  # busy [5, 15]
    events.append(_op("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", 20, 60, "user_annotation"))
    events += _kernel(95, 100, 10)  # idle [15, 100]: 60 in the DataLoader (data), 25 outside it (host)
    events.append(_op("cudaStreamSynchronize", 105, 7, "cuda_runtime"))  # ends at 112, just after the kernel
    events += _kernel(150, 160, 10)  # idle [110, 160]: a sync ended in it (sync 50)
    events += _kernel(165, 200, 10)  # idle [170, 200]: launched at 165, before the gap began (device 30)
    window = _analyse(tmp_path, events)["ranks"][0]["window"]
    assert window["kind"] == "steps" and window["span_us"] == 400
    assert (window["idle_data_us"], window["idle_sync_us"], window["idle_device_us"]) == (60, 50, 30)
    assert window["idle_host_us"] == pytest.approx(5 + 5 + 20 + 190)  # before the first kernel, around the loader, the tail
    assert window["idle_us"] == window["idle_data_us"] + window["idle_sync_us"] + window["idle_host_us"] + window["idle_device_us"]
    assert window["kernel_utilisation_fraction"] == pytest.approx(40 / 400)
    assert window["dataloader_fraction"] == pytest.approx(60 / 400)


def test_a_step_extends_to_the_device_work_it_launched(tmp_path: Path) -> None:
    """The plugin's step: host window, then to the end of the kernels its launches queued; the next
    step starts where that one ended."""
    events = [_op("ProfilerStep#1", 0, 100, "user_annotation"), _op("ProfilerStep#2", 100, 100, "user_annotation")]
    events += _kernel(90, 95, 55)  # launched in step 1, runs to 150
    events += _kernel(160, 170, 10)
    window = _analyse(tmp_path, events)["ranks"][0]["window"]
    assert (window["start_us"], window["end_us"], window["span_us"]) == (0, 200, 200)
    assert window["step_us_median"] == pytest.approx(100)  # step 1: [0, 150]; step 2: [150, 200]
    assert window["busy_us"] == 65


def test_a_graph_capture_is_named_and_not_ranked(tmp_path: Path) -> None:
    """A serving trace recorded during a graph capture: 400 launches recorded, 2 kernels run."""
    events = [_op("ProfilerStep#1", 0, 5000, "user_annotation"), _op("hipStreamBeginCapture", 10, 2, "cuda_runtime")]
    events += [_op("hipLaunchKernel", 20 + 10 * i, 3, "cuda_runtime", correlation=10_000 + i) for i in range(400)]
    events.append(_op("hipStreamEndCapture", 4100, 5, "cuda_runtime"))
    events += _kernel(4200, 4210, 2, name="fill_kernel", launch="hipLaunchKernel")
    events += _kernel(4300, 4310, 2, name="fill_kernel", launch="hipLaunchKernel")
    report = _analyse(tmp_path, events)
    assert report["ranks"][0]["window"]["state"] == "capture"
    assert any("graph capture" in w for w in report["warnings"])
    record = Record(kind="traces")
    record.trace = report
    found = {f.id: f for f in diagnose_record(record)}
    assert "TD-CONF-003" in found and found["TD-CONF-003"].upside == 0
    assert not {"TD-COMP-001", "TD-COMP-002", "TD-COMP-003", "TD-COMP-004"} & set(found)


def test_graph_launches_with_kernels_are_ordinary_replays(tmp_path: Path) -> None:
    events = [_op("ProfilerStep#1", 0, 100, "user_annotation")]
    events += _kernel(10, 20, 30, launch="cudaGraphLaunch")
    assert _analyse(tmp_path, events)["ranks"][0]["window"]["state"] == "ok"


def test_a_gpu_run_without_device_events_is_no_device_work(tmp_path: Path) -> None:
    events = [_op("ProfilerStep#1", 0, 100, "user_annotation"), _op("aten::mm", 10, 20)]
    props = {"deviceProperties": [{"id": 0, "name": "A100", "computeMajor": 8, "computeMinor": 0}]}
    assert _analyse(tmp_path, events, **props)["ranks"][0]["window"]["state"] == "no_device_work"
    assert _analyse(tmp_path, events)["ranks"][0]["window"]["state"] == "cpu_only"


def test_operators_of_other_windows_never_divide_zero_by_zero(tmp_path: Path) -> None:
    """An operator of another step (count 0 in this one) tied at zero self time with this step's
    operators is not listed among this step's, so no mean self time of 0/0 (a RuntimeWarning) is
    computed."""
    events = [_op("z_other_step", 150, 10),  # interned first, so it sorts first among the zero totals
              _op("ProfilerStep#1", 0, 100, "user_annotation"), _op("ProfilerStep#2", 100, 100, "user_annotation"),
              _op("aten::outer", 10, 20), _op("aten::inner", 10, 20)]
    report = _analyse(tmp_path, events)  # RuntimeWarnings are errors here
    step = report["ranks"][0]["steps"][0]["host"]["top_by_self_time"]
    assert {op["name"] for op in step} == {"aten::outer", "aten::inner"} and all(op["count"] for op in step)
