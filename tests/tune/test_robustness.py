"""`torchdoctor tune` when trials misbehave (hang, crash), when the user presses Ctrl-C, on a
script whose loss is noisy at baseline, and on the Optuna path of an integer knob."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Iterator

import orjson

from tests.observe.helpers import WIDE_ENV
from tests.tune.test_tune_cli import SCRIPTS, _tune
from torchdoctor.knobs import REGISTRY
from torchdoctor.launch.child import STOP_GRACE_S
from torchdoctor.record import Record
from torchdoctor.store import RunStore


def test_a_hanging_trial_times_out_a_crashing_one_fails_and_the_search_goes_on(tmp_path: Path) -> None:
    # The timeout applies to every trial, the healthy ones too: it must outlast a healthy trial on a
    # loaded host (the profiled baseline took 25 s at a load average of 6.6 on 2 cores; 5 s idle).
    timeout_s = 60
    proc, result = _tune(tmp_path, "--knobs", "num_workers,zero_grad_set_to_none,optimizer_impl",
                         "--int-trials", "1", "--trial-timeout", str(timeout_s), "--no-repeat-baseline",
                         "--rounds", "1", "--confirm-rounds", "1", "--confirm-max-rounds", "2",
                         "--warmup-steps", "2", "--steps", "6", "--", str(SCRIPTS / "misbehave.py"))
    assert proc.returncode == 0, proc.stderr
    by_knob = {t["knob"]: t for t in result["trials"]}
    assert by_knob["num_workers"]["status"] == "failed"
    assert by_knob["num_workers"]["reason"].startswith(f"timed out after {timeout_s} s; the script's output: ")
    # Stopped (SIGINT at the timeout, killed STOP_GRACE_S later at worst), not waited for: its
    # DataLoader workers sleep for an hour. 15 s: reaping the killed process tree.
    assert by_knob["num_workers"]["duration_s"] < timeout_s + STOP_GRACE_S + 15
    assert by_knob["zero_grad_set_to_none"]["status"] == "failed"
    assert by_knob["zero_grad_set_to_none"]["reason"].startswith("killed")  # SIGABRT: no Python error
    assert by_knob["optimizer_impl"]["status"] in ("kept", "rejected")  # measured after both failures
    assert by_knob["optimizer_impl"]["verdict"] is not None
    assert {r["knob"] for r in result["rejected"] if r["status"] == "failed"} == {"num_workers", "zero_grad_set_to_none"}


def _wait_for_runs(marker: Path, runs: int, proc: subprocess.Popen, timeout_s: float) -> None:
    """Until the script has announced `runs` runs in `marker` (one line each, written once the
    run is in its timing window). Polling a condition, not a guess of how long things take."""
    deadline = time.monotonic() + timeout_s
    while not (marker.exists() and marker.read_text(encoding="utf-8").count("\n") >= runs):
        if proc.poll() is not None:
            raise AssertionError(f"tune ended before run {runs} started: {proc.communicate()}")
        if time.monotonic() > deadline:
            os.killpg(proc.pid, signal.SIGKILL)
            raise AssertionError(f"run {runs} did not start within {timeout_s:.0f} s: {proc.communicate()}")
        time.sleep(0.05)


def test_ctrl_c_keeps_the_trials_so_far_and_reports_the_best_and_the_baselines_noise(tmp_path: Path) -> None:
    out, db, marker = tmp_path / "tune.json", tmp_path / "runs.db", tmp_path / "runs.txt"
    # Runs 1-3 are the baseline: its profiled run (10 timed steps) and two repeats that time the
    # trials' window (25 of its 40 ms steps: 1 s). Run 4, the first knob's trial, holds itself open
    # in its timing window once it has announced itself, until Ctrl-C.
    command = [sys.executable, "-m", "torchdoctor", "tune", "--json", str(out), "--store", str(db),
               "--knobs", "zero_grad_set_to_none,optimizer_impl", "--warmup-steps", "2", "--steps", "10", "--no-seed",
               "--", str(SCRIPTS / "noisy_slow.py"), str(marker), "4"]
    # Its own process group, as a terminal's foreground job: Ctrl-C reaches the tuner, which passes it
    # on to the trial (in a process group of its own).
    proc = subprocess.Popen(command, cwd=tmp_path, env=WIDE_ENV, start_new_session=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _wait_for_runs(marker, 4, proc, timeout_s=200)
    os.killpg(proc.pid, signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr  # interrupted is not success
    result = orjson.loads(out.read_bytes())
    assert result["stop_reason"].startswith("interrupted (Ctrl-C)") and result["exit_status"] == 130
    statuses = [t["status"] for t in result["trials"]]
    # The baseline trial (its three runs), then the held trial, and nothing after it.
    assert statuses == ["baseline", "interrupted"] and len(result["trials"][0]["runs"]) == 3
    assert result["best_step_s"] == result["baseline_step_s"] and result["kept"] == {}
    stored = RunStore(db).trials(result["tune_id"])
    assert [t["trial"] for t in stored] == [t["index"] for t in result["trials"]]
    # Unseeded (--no-seed), the script's loss differs between the two baseline runs: measured and reported.
    assert result["noise"]["loss_difference"] > 0 and result["noise"]["deterministic"] is False
    assert "mean loss differs run to run by" in stdout


def test_an_integer_knob_is_searched_with_optuna_over_more_than_two_values(tmp_path: Path) -> None:
    proc, result = _tune(tmp_path, "--knobs", "prefetch_factor", "--int-trials", "3", "--no-repeat-baseline",
                         "--rounds", "1", "--confirm-rounds", "1", "--confirm-max-rounds", "2",
                         "--warmup-steps", "2", "--steps", "6", "--", str(SCRIPTS / "worker_loader.py"))
    assert proc.returncode == 0, proc.stderr
    tried = [t["value"] for t in result["trials"] if t["knob"] == "prefetch_factor"]
    span = REGISTRY["prefetch_factor"].int_range(Record())
    assert len(tried) == 3 and len(set(tried)) == 3  # three distinct values, none measured twice
    assert tried[0] == span.first  # the knob's own first guess is enqueued first
    assert all(span.low <= v <= span.high for v in tried)
    assert all(t["numerics"]["ok"] for t in result["trials"] if t["knob"])


def _alive(pid: int) -> bool:
    import psutil

    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _start_until_ready(command: list[str], cwd: Path,
                       log: str | None = None) -> tuple[subprocess.Popen[str], list[int]]:
    """Start a torchdoctor command on tests/observe/scripts/family.py; wait for its READY line, on the
    command's stdout or, given `log` (a pattern under `cwd`: tune writes the script's output to a file),
    in that file; returns the process and the pids of the script and its helpers."""
    proc = subprocess.Popen(command, cwd=cwd, env=WIDE_ENV, start_new_session=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    pids = []
    for line in proc.stdout if log is None else _growing_lines(proc, cwd, log):
        words = line.split()
        if words[:1] in (["HELPERS"], ["READY"]):
            pids += [int(w) for w in words[1:]]
        if words[:1] == ["READY"]:
            return proc, pids
    raise AssertionError(proc.communicate()[1][-2000:])


def _growing_lines(proc: subprocess.Popen[str], cwd: Path, log: str) -> Iterator[str]:
    """The whole lines of the first file matching `log` under `cwd`, as they are written, while `proc` runs."""
    seen = 0
    while proc.poll() is None:
        files = sorted(cwd.glob(log))
        text = files[0].read_text() if files else ""
        lines = [line for line in text.splitlines(keepends=True) if line.endswith("\n")]
        yield from lines[seen:]
        seen = len(lines)
        time.sleep(0.1)


def test_sigterm_to_tune_stops_its_trial_and_exits_143_with_no_orphan(tmp_path: Path) -> None:
    family = Path(__file__).resolve().parents[1] / "observe" / "scripts" / "family.py"
    proc, pids = _start_until_ready(
        [sys.executable, "-m", "torchdoctor", "tune", "--store", str(tmp_path / "runs.db"), "--warmup-steps", "2",
         "--steps", "100000", "--", str(family), "4"], tmp_path, log="tune/*/run0/script.log")
    proc.send_signal(signal.SIGTERM)  # to torchdoctor alone: it passes it on to the baseline trial
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 143, stderr
    assert "interrupted (SIGTERM) during the baseline run" in stderr and "Traceback" not in stderr
    assert not [pid for pid in pids if _alive(pid)]


def test_sigterm_to_run_apply_reaches_the_script_and_leaves_no_orphan(tmp_path: Path) -> None:
    family = Path(__file__).resolve().parents[1] / "observe" / "scripts" / "family.py"
    result_file = tmp_path / "tune.json"
    result_file.write_bytes(orjson.dumps({"schema_version": 1, "kept": {"threads": 1}}))
    proc, pids = _start_until_ready(
        [sys.executable, "-m", "torchdoctor", "run", "--apply", str(result_file), "--", str(family), "4"], tmp_path)
    proc.send_signal(signal.SIGTERM)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 143, stderr
    assert not [pid for pid in pids if _alive(pid)]
