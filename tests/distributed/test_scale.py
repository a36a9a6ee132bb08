"""`torchdoctor scale`: the same script at 1 and 2 processes, with speed-up and efficiency."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from torchdoctor.distributed.errors import ScaleError
from torchdoctor.distributed.scale import process_counts, scaling_document
from tests.observe.helpers import WIDE_ENV

SCRIPTS = Path(__file__).resolve().parent / "scripts"


@pytest.mark.slow
def test_scale_runs_one_and_two_processes_and_derives_speedup(tmp_path):
    out = tmp_path / "scale.json"
    command = [sys.executable, "-m", "torchdoctor", "scale", "--max-nproc", "2", "--warmup-steps", "2",
               "--steps", "6", "--json", str(out), "--html", str(tmp_path / "scale.html"), "--",
               str(SCRIPTS / "ddp_balanced.py")]
    proc = subprocess.run(command, capture_output=True, text=True, timeout=180, cwd=tmp_path, env=WIDE_ENV)
    assert proc.returncode == 0, proc.stderr
    doc = orjson.loads(out.read_bytes())
    assert doc["schema_version"] == 1
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
    assert [f["id"] for f in doc["findings"]] == ["scale.low_efficiency", "scale.run_failed"]
