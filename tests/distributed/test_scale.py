"""`torchdoctor scale`: the same script at 1 and 2 processes, with speed-up and efficiency."""

from __future__ import annotations

import subprocess
import sys

import orjson
import pytest

from torchdoctor.distributed.errors import ScaleError
from torchdoctor.distributed.scale import process_counts, scaling_document
from tests.observe.helpers import SCRIPTS as OBSERVE_SCRIPTS  # ddp_gloo.py, a balanced DDP job
from tests.observe.helpers import WIDE_ENV


@pytest.mark.slow
def test_scale_runs_one_and_two_processes_and_derives_speedup(tmp_path):
    out = tmp_path / "scale.json"
    command = [sys.executable, "-m", "torchdoctor", "scale", "--max-nproc", "2", "--warmup-steps", "2",
               "--steps", "6", "--json", str(out), "--html", str(tmp_path / "scale.html"), "--",
               str(OBSERVE_SCRIPTS / "ddp_gloo.py"), "128", "512", "64"]
    proc = subprocess.run(command, capture_output=True, text=True, timeout=180, cwd=tmp_path, env=WIDE_ENV)
    assert proc.returncode == 0, proc.stderr
    doc = orjson.loads(out.read_bytes())
    assert doc["schema_version"] == 2
    one, two = doc["sizes"]
    assert (one["nproc"], two["nproc"]) == (1, 2)
    assert one["exit_reason"] == two["exit_reason"] == "completed"
    assert one["speedup"] == 1.0 and one["efficiency"] == 1.0
    assert two["speedup"] == pytest.approx(two["throughput_per_s"] / one["throughput_per_s"])
    assert two["efficiency"] == pytest.approx(two["speedup"] / 2)
    assert one["distributed"] is None and two["distributed"]["ranks_count"] == 2
    assert "speed-up" in proc.stdout
    assert (tmp_path / "scale.html").read_text().count("<circle") == 2  # one point per size


def test_process_counts_double_up_to_the_maximum():
    assert process_counts(1) == [1]
    assert process_counts(4) == [1, 2, 4]
    assert process_counts(6) == [1, 2, 4, 6]
    with pytest.raises(ScaleError):
        process_counts(0)


def _row(nproc, throughput, reason="completed"):
    return {"nproc": nproc, "throughput_per_s": throughput, "unit": "samples/s", "exit_reason": reason,
            "exit_message": "the script raised an exception", "distributed": None}


def test_low_efficiency_and_failed_sizes_are_findings():
    doc = scaling_document("s.py", [], [_row(1, 100.0), _row(2, 120.0), _row(4, None, "script_error")])
    assert doc["sizes"][1]["efficiency"] == pytest.approx(0.6)
    assert [f["id"] for f in doc["findings"]] == ["TD-SCALE-010", "TD-SCALE-009"]
    low, failed = doc["findings"]
    assert low["layer"] == "scale" and low["severity"] == "problem" and low["upside"] == pytest.approx(0.4)
    assert low["evidence"]["nproc"] == 2 and low["evidence"]["efficiency"] == pytest.approx(0.6)
    assert low["title"] == "at 2 processes the speed-up is 1.20x (60% efficiency)"
    assert failed["severity"] == "problem" and failed["evidence"]["nproc"] == 4
    assert failed["title"] == "at 4 processes: the script raised an exception"


@pytest.mark.parametrize(("throughput", "severity"), [(160.0, "warning"), (180.0, None), (130.0, "problem")])
def test_efficiency_below_the_guides_87_percent_is_a_warning_and_below_70_a_problem(throughput, severity):
    doc = scaling_document("s.py", [], [_row(1, 100.0), _row(2, throughput)])
    assert [f["severity"] for f in doc["findings"]] == ([severity] if severity else [])


def _timed_row(nproc, throughput, step_s, data_wait_s, backward_s, gap_s=0.0):
    return {**_row(nproc, throughput), "step_s": step_s, "data_wait_s": data_wait_s, "backward_s": backward_s,
            "distributed": {"gap_s": gap_s}}


def test_the_layer_that_eats_the_scaling_loss_is_named():
    doc = scaling_document("s.py", [], [_timed_row(1, 100.0, 0.010, 0.001, 0.004),
                                        _timed_row(2, 120.0, 0.016, 0.001, 0.009, gap_s=0.001)])
    two = doc["sizes"][1]
    assert two["layer"] == "communication"
    assert two["lost_s_by_layer"]["communication"] == pytest.approx(0.005)
    [finding] = doc["findings"]
    assert finding["evidence"]["loss_layer"] == "communication" and "most of the loss is communication" in finding["title"]
    assert finding["knob"] == "bucket_cap_mb" and "bucket_cap_mb" in finding["fix"]["code"]


def test_a_single_process_waiting_on_data_is_told_to_fix_that_first():
    doc = scaling_document("s.py", [], [_timed_row(1, 100.0, 0.010, 0.006, 0.002),
                                        _timed_row(2, 190.0, 0.0105, 0.006, 0.0025)])
    [finding] = doc["findings"]
    assert finding["id"] == "TD-SCALE-008" and finding["knob"] == "num_workers"
    assert finding["upside"] == pytest.approx(0.6) and finding["evidence"]["data_wait_fraction"] == pytest.approx(0.6)


def test_each_straggler_at_a_size_is_the_straggler_rules_finding_with_that_size():
    straggler = {"rank": 1, "excess_s": 0.049, "excess_of_step_fraction": 0.95, "cause": "compute or host work"}
    two = {**_timed_row(2, 200.0, 0.010, 0.0, 0.002), "distributed": {"gap_s": 0.0, "stragglers": [straggler]}}
    doc = scaling_document("s.py", [], [_timed_row(1, 100.0, 0.010, 0.0, 0.002), two])
    [finding] = doc["findings"]
    assert finding["id"] == "TD-SCALE-002" and finding["severity"] == "problem" and finding["upside"] == 0.95
    assert finding["title"] == "at 2 processes rank 1 holds the others back by 95% of a step (compute or host work)"
    assert finding["evidence"]["nproc"] == 2 and finding["evidence"]["slowest_rank"] == 1
