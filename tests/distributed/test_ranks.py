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
    sleep_s = 0.15  # large against a loaded host's stalls, which skew the backward fractions
    proc, record = _diagnose(tmp_path, "ddp_straggler.py", str(sleep_s))
    assert proc.returncode == 0, proc.stderr
    section = record.distributed
    assert section["ranks_count"] == 2 and section["lockstep"]  # DDP: walls agree, work does not
    assert section["slowest_rank"] == 1
    assert [s["rank"] for s in section["stragglers"]] == [1]
    # Its excess is its sleep (most of it: the load is estimated from backward fractions), and a
    # part of its own median step, not of a sum of steps. Measured: 0.9-1.0 of the sleep.
    (straggler,) = section["stragglers"]
    (own,) = [row for row in section["per_rank"] if row["rank"] == 1]
    assert 2 / 3 * sleep_s < straggler["excess_s"] <= own["step_s"]


def test_balanced_ddp_has_no_straggler(tmp_path):
    proc, record = _diagnose(tmp_path, *BALANCED)
    assert proc.returncode == 0, proc.stderr
    assert record.distributed["ranks_count"] == 2
    assert record.distributed["stragglers"] == []
    assert record.distributed["step_counts_match"]

