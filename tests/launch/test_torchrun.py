"""Under torchrun (gloo, two real processes) every rank records itself and the parent merges them."""

from __future__ import annotations

import pytest

from tests.observe.helpers import FAST, run_diagnose

pytestmark = pytest.mark.slow


def test_ddp_with_gloo_on_two_ranks_records_both_and_stops_cleanly(tmp_path):
    temporary = tmp_path / "tmp"  # the temporary folder of torchdoctor, torchrun and the ranks
    temporary.mkdir()
    proc, record = run_diagnose(tmp_path, "ddp_gloo.py", options=FAST + ["--nproc-per-node", "2"],
                                env={"TMPDIR": str(temporary)})
    assert proc.returncode == 0, proc.stderr
    # torchrun's elastic agent leaves a `torchelastic_*` log folder behind; ours is removed
    assert not [p.name for p in temporary.iterdir() if p.name.startswith(("torchelastic_", "torchdoctor-"))]
    assert "SIGABRT" not in proc.stderr and "Traceback" not in proc.stderr
    assert record.exit.reason == "completed"
    assert [r["rank"] for r in record.ranks] == [0, 1]
    assert all(len(r["steps"]) == 6 for r in record.ranks)
    assert record.env["distributed"]["world_size"] == 2
    assert record.env["distributed"]["backend"] == "gloo"
    assert record.env["models"][0]["class"] == "DistributedDataParallel"
    assert len(record.artifacts["traces"]) == 2
    assert "rank 0 done" not in proc.stdout  # stopped once measured, before the loop ended


def test_torchdoctor_started_by_the_users_own_torchrun_merges_ranks_on_rank_0(tmp_path):
    import subprocess
    import sys

    from tests.observe.helpers import SCRIPTS, WIDE_ENV
    from torchdoctor.record import Record

    out = tmp_path / "record.json"
    command = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2",
               f"--log-dir={tmp_path / 'torchrun-logs'}", "-m", "torchdoctor",
               "diagnose", *FAST, "--json", str(out), "--store", str(tmp_path / "runs.db"), "--",
               str(SCRIPTS / "ddp_gloo.py")]
    proc = subprocess.run(command, capture_output=True, text=True, timeout=180, cwd=tmp_path, env=WIDE_ENV)
    assert proc.returncode == 0, proc.stderr
    record = Record.load(out)
    assert record.run_id.startswith("torchrun-")
    assert [r["rank"] for r in record.ranks] == [0, 1]
    assert proc.stdout.count("Where each step's time goes") == 1  # one report, from rank 0


def test_a_rendezvous_that_never_completes_times_out_with_a_clear_message(tmp_path):
    import socket

    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    rendezvous = ["--torchrun-arg=--nnodes=2", "--torchrun-arg=--rdzv-backend=c10d",
                  f"--torchrun-arg=--rdzv-endpoint=127.0.0.1:{port}", "--torchrun-arg=--rdzv-id=never",
                  "--rdzv-timeout", "3"]
    proc, record = run_diagnose(tmp_path, "ddp_gloo.py", options=FAST + ["--nproc-per-node", "1", *rendezvous])
    assert proc.returncode != 0
    assert record.exit.reason == "killed"
    assert "rendezvous did not complete" in proc.stdout
