"""The trace summary's typed values read back what `diagnose` writes: every real GPU trace in the
shared fixtures (the two sampled ranks together) and a CPU demo run give, through `from_dict` and
`to_dict`, the very JSON they were read from; a part of the wrong shape is an error naming its field."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from torchdoctor.errors import RecordFormatError
from torchdoctor.trace.summary.device import DeviceFigures
from torchdoctor.trace.summary.facts import TraceFacts
from torchdoctor.trace.summary.rank import RankSummary
from torchdoctor.trace.summary.trace_summary import TraceSummary
from torchdoctor.trace.summary.window import Window

REPO_ROOT = Path(__file__).resolve().parents[2]
TRACES = Path(os.environ.get("TORCHDOCTOR_SHARED", REPO_ROOT.parent / "shared")) / "fixtures" / "traces"
RUNS = {path.name: [path] for path in sorted(TRACES.glob("*.json.gz"))}
RUNS["multirank-sampled"] = sorted((TRACES / "multirank-sampled").glob("*.json.gz"))


def _diagnosed(tmp_path: Path, *args: str) -> dict[str, Any]:
    out = tmp_path / "record.json"
    subprocess.run([sys.executable, "-m", "torchdoctor", "diagnose", "--no-save", "--json", str(out), *args],
                   check=True, capture_output=True, cwd=tmp_path, timeout=600)
    return json.loads(out.read_text())["trace"]


def _assert_round_trips(trace: dict[str, Any]) -> None:
    assert trace["ranks"]
    for i, rank in enumerate(trace["ranks"]):
        window = Window.from_dict(rank["window"])
        assert json.dumps(window.to_dict()) == json.dumps(rank["window"])
        assert TraceFacts.from_dict(rank["facts"]).to_dict() == rank["facts"], f"ranks[{i}].facts"
        if rank["device"] is not None:
            assert json.dumps(DeviceFigures.from_dict(rank["device"]).to_dict()) == json.dumps(rank["device"])
        assert json.dumps(RankSummary.from_dict(rank).to_dict()) == json.dumps(rank), f"ranks[{i}]"
    summary = TraceSummary.from_dict(trace)
    assert json.dumps(summary.to_dict()) == json.dumps(trace)
    assert summary.multi_rank.compared == (len(trace["ranks"]) > 1 and "per_rank" in trace["multi_rank"])


@pytest.mark.parametrize("name", sorted(RUNS))
def test_real_traces_round_trip(name: str, tmp_path: Path) -> None:
    assert RUNS[name], f"no trace for {name} under {TRACES}"
    _assert_round_trips(_diagnosed(tmp_path, *(arg for path in RUNS[name] for arg in ("--trace", str(path)))))


@pytest.mark.slow
def test_cpu_demo_run_round_trips(tmp_path: Path) -> None:
    from torchdoctor.zoo import demo_script

    # Short windows and small batches: the summary's shape, not the demo's figures, is under test.
    short = ["--warmup-steps", "2", "--steps", "4", "--profile-wait", "0", "--profile-warmup", "1",
             "--profile-active", "2", "--no-memory"]
    _assert_round_trips(_diagnosed(tmp_path, *short, "--", str(demo_script()), "--batch-size", "4"))


def test_window_leaves_out_the_keys_it_lacked() -> None:
    empty = {"kind": "empty", "state": "no_events", "span_us": 0.0}
    assert Window.from_dict(empty).to_dict() == empty
    assert list(Window.from_dict(empty).to_dict()) == ["kind", "state", "span_us"]
    no_busy = {"kind": "steps", "state": "no_device_work", "span_us": 5.0, "idle_fraction": None,
               "kernel_utilisation_by_device": {}}
    assert json.dumps(Window.from_dict(no_busy).to_dict()) == json.dumps(no_busy)


def test_device_parts_leave_out_the_keys_they_lacked() -> None:
    empty = {"temporal": {}, "kernels": {"kernels_count": 0, "top": []}, "launches": {"launches_count": 0},
             "overlap": {"comm_us": 0.0, "comm_comp_overlap_us": 0.0, "comm_comp_overlap_fraction": None},
             "queue": {}, "compute_us": 0.0, "comm_us": 0.0}
    assert json.dumps(DeviceFigures.from_dict(empty).to_dict()) == json.dumps(empty)
    assert DeviceFigures.from_dict({"temporal": {}}).kernels.top == ()


@pytest.mark.parametrize(("read", "data", "field"), [
    (DeviceFigures.from_dict, {"temporal": {"span_us": "long"}}, "temporal.span_us"),
    (DeviceFigures.from_dict, {"kernels": {"top": [{"name": "k", "total_us": "1"}]}}, "kernels.top[0].total_us"),
    (DeviceFigures.from_dict, {"kernels": {"top": [{"count": 1}]}}, "kernels.top[0].name"),
    (DeviceFigures.from_dict, {"idle": {"streams": [{"stream": "7"}]}}, "idle.streams[0].stream"),
    (DeviceFigures.from_dict, {"queue": []}, "device.queue"),
    (RankSummary.from_dict, {"host": {"top_by_self_time": [{"name": "aten::mm", "self_us": None}]}},
     "trace.ranks[].host.top_by_self_time[0].self_us"),
    (RankSummary.from_dict, {"steps": [{"sync_calls": {"by_name": {"item": {"count": "2"}}}}]},
     "steps[0].sync_calls.by_name.item.count"),
    (RankSummary.from_dict, {"dialect": {"dataloader_spans": "enumerate"}}, "trace.ranks[].dialect.dataloader_spans"),
    (RankSummary.from_dict, {"window": {"kind": "steps"}}, "trace.ranks[].window.state"),
    (RankSummary.from_dict, {"facts": {"devices_used": "0"}}, "trace.ranks[].facts.devices_used"),
    (TraceSummary.from_dict, {"ranks": [{"shares": {"forward_fraction": "half"}}]}, "trace.ranks[0].shares.forward_fraction"),
    (TraceSummary.from_dict, {"multi_rank": {"per_rank": [{"rank": "1"}]}}, "trace.multi_rank.per_rank[0].rank"),

    (Window.from_dict, {"kind": "steps", "span_us": 1.0}, "state"),
    (Window.from_dict, {"state": "ok", "idle_fraction": "most"}, "idle_fraction"),
    (Window.from_dict, {"state": "ok", "kernel_utilisation_by_device": {"0": "busy"}}, "kernel_utilisation_by_device.0"),
    (TraceFacts.from_dict, {"devices_used": "0"}, "devices_used"),
    (TraceFacts.from_dict, {"memory": {"cuda:0": {"total_bytes": "big"}}}, "memory.cuda:0.total_bytes"),
    (TraceFacts.from_dict, {"device_properties": [{"computeMajor": "9"}]}, "device_properties[0].computeMajor"),
])
def test_wrong_shapes_name_the_field(read: Any, data: dict[str, Any], field: str) -> None:
    with pytest.raises(RecordFormatError, match=field.replace(".", r"\.").replace("[", r"\[")):
        read(data)
