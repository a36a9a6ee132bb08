"""Under torchrun (gloo, two real processes) every rank records itself and the parent merges them."""

from __future__ import annotations

import pytest

from tests.observe.helpers import FAST, run_diagnose

pytestmark = pytest.mark.slow


def test_ddp_with_gloo_on_two_ranks_records_both_and_stops_cleanly(tmp_path):
    proc, record = run_diagnose(tmp_path, "ddp_gloo.py", options=FAST + ["--nproc-per-node", "2"])
    assert proc.returncode == 0, proc.stderr
    assert "SIGABRT" not in proc.stderr and "Traceback" not in proc.stderr
    assert record.exit.reason == "completed"
    assert [r["rank"] for r in record.ranks] == [0, 1]
    assert all(len(r["steps"]) == 6 for r in record.ranks)
    assert record.env["distributed"]["world_size"] == 2
    assert record.env["distributed"]["backend"] == "gloo"
    assert record.env["models"][0]["class"] == "DistributedDataParallel"
    assert len(record.artifacts["traces"]) == 2
    assert "rank 0 done" not in proc.stdout  # stopped once measured, before the loop ended
