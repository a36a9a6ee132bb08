"""`diagnose --nproc-per-node 2` fills `record.distributed`: a sleeping rank is found, a balanced job is not."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.observe.helpers import FAST, run_diagnose
from tests.observe.helpers import SCRIPTS as OBSERVE_SCRIPTS

pytestmark = pytest.mark.slow
SCRIPTS = Path(__file__).resolve().parent / "scripts"  # absolute: run_diagnose joins it as is


BALANCED = (str(OBSERVE_SCRIPTS / "ddp_gloo.py"), "128", "512", "64")  # a balanced DDP job


def _diagnose(tmp_path, name, *args, nproc="2"):
    return run_diagnose(tmp_path, str(SCRIPTS / name), *args,
                        options=[*FAST, "--no-profile", "--nproc-per-node", nproc])


def test_a_rank_that_sleeps_each_step_is_the_straggler(tmp_path):
    proc, record = _diagnose(tmp_path, "ddp_straggler.py")
    assert proc.returncode == 0, proc.stderr
    section = record.distributed
    assert section["ranks_count"] == 2 and section["lockstep"]  # DDP: walls agree, work does not
    assert section["slowest_rank"] == 1
    assert [s["rank"] for s in section["stragglers"]] == [1]
    assert 0.03 < section["stragglers"][0]["excess_s"] < 0.2  # it sleeps 50 ms per step


def test_balanced_ddp_has_no_straggler(tmp_path):
    proc, record = _diagnose(tmp_path, *BALANCED)
    assert proc.returncode == 0, proc.stderr
    assert record.distributed["ranks_count"] == 2
    assert record.distributed["stragglers"] == []
    assert record.distributed["step_counts_match"]

