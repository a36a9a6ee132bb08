"""`torchdoctor tune` when trials misbehave (hang, crash), when the user presses Ctrl-C, on a
script whose loss is noisy at baseline, and on the Optuna path of an integer knob."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import orjson

from tests.observe.helpers import WIDE_ENV
from tests.tune.test_tune_cli import SCRIPTS, _tune
from torchdoctor.knobs import REGISTRY
from torchdoctor.record import Record
from torchdoctor.store import RunStore


def test_a_hanging_trial_times_out_a_crashing_one_fails_and_the_search_goes_on(tmp_path: Path) -> None:
    proc, result = _tune(tmp_path, "--knobs", "num_workers,zero_grad_set_to_none,optimizer_impl",
                         "--int-trials", "1", "--trial-timeout", "30", "--no-repeat-baseline", "--rounds", "1",
                         "--confirm-rounds", "1",
                         "--warmup-steps", "2", "--steps", "6", "--", str(SCRIPTS / "misbehave.py"))
    assert proc.returncode == 0, proc.stderr
    by_knob = {t["knob"]: t for t in result["trials"]}
    assert by_knob["num_workers"]["status"] == "failed"
    assert by_knob["num_workers"]["reason"] == "timed out after 30 s"
    assert by_knob["num_workers"]["duration_s"] < 90  # stopped, not waited for
    assert by_knob["zero_grad_set_to_none"]["status"] == "failed"
    assert by_knob["zero_grad_set_to_none"]["reason"].startswith("killed")  # SIGABRT: no Python error
    assert by_knob["optimizer_impl"]["status"] in ("kept", "rejected")  # measured after both failures
    assert by_knob["optimizer_impl"]["verdict"] is not None
    assert {r["knob"] for r in result["rejected"] if r["status"] == "failed"} == {"num_workers", "zero_grad_set_to_none"}


def _stored_runs(db: Path) -> int:
    if not db.exists():
        return 0
    try:
        with sqlite3.connect(db) as connection:
            return connection.execute("SELECT COUNT(*) FROM runs").fetchone()[0]
    except sqlite3.OperationalError:  # the table is not created yet, or the file is locked
        return 0


def test_ctrl_c_keeps_the_trials_so_far_and_reports_the_best_and_the_baselines_noise(tmp_path: Path) -> None:
    out, db = tmp_path / "tune.json", tmp_path / "runs.db"
    command = [sys.executable, "-m", "torchdoctor", "tune", "--json", str(out), "--store", str(db),
               "--knobs", "zero_grad_set_to_none,optimizer_impl", "--warmup-steps", "2", "--steps", "10", "--no-seed",
               "--", str(SCRIPTS / "noisy_slow.py")]
    # Its own process group, as a terminal's foreground job: Ctrl-C reaches the tuner and the trial.
    proc = subprocess.Popen(command, cwd=tmp_path, env=WIDE_ENV, start_new_session=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while _stored_runs(db) < 2 and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.2)  # both baseline runs are stored; the first knob's trial is starting
    time.sleep(1.5)
    os.killpg(proc.pid, signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 0, stderr
    result = orjson.loads(out.read_bytes())
    assert result["stop_reason"].startswith("interrupted")
    statuses = [t["status"] for t in result["trials"]]
    assert statuses[0] == "baseline" and "interrupted" in statuses
    assert len(result["trials"][0]["runs"]) >= 2  # the baseline and its repeat
    assert result["best_step_s"] == result["baseline_step_s"] and result["kept"] == {}
    stored = RunStore(db).trials(result["tune_id"])
    assert [t["trial"] for t in stored] == [t["index"] for t in result["trials"]]
    # Unseeded (--no-seed), the script's loss differs between the two baseline runs: measured and reported.
    assert result["noise"]["loss_difference"] > 0 and result["noise"]["deterministic"] is False
    assert "mean loss differs run to run by" in stdout


def test_an_integer_knob_is_searched_with_optuna_over_more_than_two_values(tmp_path: Path) -> None:
    proc, result = _tune(tmp_path, "--knobs", "prefetch_factor", "--int-trials", "3", "--no-repeat-baseline",
                         "--rounds", "1", "--confirm-rounds", "1",
                         "--warmup-steps", "2", "--steps", "6", "--", str(SCRIPTS / "worker_loader.py"))
    assert proc.returncode == 0, proc.stderr
    tried = [t["value"] for t in result["trials"] if t["knob"] == "prefetch_factor"]
    span = REGISTRY["prefetch_factor"].int_range(Record())
    assert len(tried) == 3 and len(set(tried)) == 3  # three distinct values, none measured twice
    assert tried[0] == span.first  # the knob's own first guess is enqueued first
    assert all(span.low <= v <= span.high for v in tried)
    assert all(t["numerics"]["ok"] for t in result["trials"] if t["knob"])
