"""torchdoctor owns the script it runs: a stop sent to torchdoctor alone reaches the script, which
saves what it measured; nothing the script started outlives torchdoctor; a script killed outright
keeps the steps it streamed; a second Ctrl-C while the Record is saved does not lose it.

Every test runs the real CLI in a subprocess (its own session, as a terminal's foreground job) on
tests/observe/scripts/family.py, which starts two helpers (one in its process group, one in a
session of its own) and says on stdout when it is ready; processes are checked with psutil."""

from __future__ import annotations

import contextlib
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from tests.observe.helpers import SCRIPTS, WIDE_ENV
from torchdoctor.record import Record

pytestmark = pytest.mark.slow

LONG = ["--warmup-steps", "2", "--steps", "100000", "--no-profile", "--no-memory"]
#: A timing window of 6 steps, then a profiler window that never ends: the script runs on.
WINDOW_THEN_MORE = ["--warmup-steps", "2", "--steps", "6", "--profile-wait", "100000", "--no-memory"]


class Diagnose:
    """`torchdoctor diagnose OPTIONS -- family.py ARGS` running in the background."""

    def __init__(self, tmp_path: Path, options: list[str], *script_args: str) -> None:
        self.json, self.store = tmp_path / "record.json", tmp_path / "runs.db"
        command = [sys.executable, "-m", "torchdoctor", "diagnose", *options, "--json", str(self.json),
                   "--store", str(self.store), "--", str(SCRIPTS / "family.py"), *script_args]
        self.proc = subprocess.Popen(command, cwd=tmp_path, env=WIDE_ENV, start_new_session=True,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.pids: list[int] = []

    def ready(self) -> int:
        """Wait for READY; returns the script's pid (the helpers' pids are kept in `pids`)."""
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            words = line.split()
            if words[:1] == ["HELPERS"]:
                self.pids += [int(w) for w in words[1:]]
            if words[:1] == ["READY"]:
                self.pids.append(int(words[1]))
                return int(words[1])
        raise AssertionError(f"the script never got ready: {self.proc.communicate()[1][-2000:]}")

    def signal(self, sig: int) -> None:
        self.proc.send_signal(sig)  # torchdoctor alone, not its process group

    def finish(self) -> tuple[int, str, Record | None]:
        try:
            _, stderr = self.proc.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            # Seen twice in three local full runs of the suite: the helpers outlived a script that took its
            # dying torchdoctor for alive (lifeline.torchdoctor_gone). Should it recur, say which of the
            # script and its helpers still held torchdoctor's pipes, and in what state, before ending them.
            left = [_describe(pid) for pid in self.pids if _alive(pid)]
            for pid in self.pids:
                with contextlib.suppress(psutil.Error):
                    psutil.Process(pid).kill()
            self.proc.kill()
            raise AssertionError(f"torchdoctor's pipes stayed open for 120 s; alive: {left}") from None
        return self.proc.returncode, stderr, Record.load(self.json) if self.json.exists() else None

    def stored(self) -> list[str]:
        with sqlite3.connect(self.store) as db:
            return [row[0] for row in db.execute("SELECT run_id FROM runs")]


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _describe(pid: int) -> str:
    try:
        process = psutil.Process(pid)
        return f"{pid} {process.status()} ppid={process.ppid()} {' '.join(process.cmdline())[:120]!r}"
    except psutil.Error as exc:
        return f"{pid} ({type(exc).__name__})"


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT])
def test_a_stop_sent_to_torchdoctor_alone_reaches_the_script_and_nothing_outlives_it(tmp_path, sig):
    run = Diagnose(tmp_path, LONG, "4")
    run.ready()
    run.signal(sig)
    status, stderr, record = run.finish()
    assert status == 128 + sig, stderr
    assert record.exit.reason == "interrupted" and record.exit.signal == sig.name
    assert record.summary.num_steps >= 2  # what it measured before the stop is kept
    assert run.stored() == [record.run_id]
    assert not [pid for pid in run.pids if _alive(pid)], "the script or a helper outlived torchdoctor"
    assert not list(tmp_path.glob(".torchdoctor/runs/*/progress.fifo")) and not list(tmp_path.rglob("*.fifo"))
    assert "Traceback" not in stderr


def test_a_second_ctrl_c_while_the_record_is_saved_still_leaves_it_stored_and_written(tmp_path):
    run = Diagnose(tmp_path, LONG, "4")
    script = psutil.Process(run.ready())
    run.signal(signal.SIGINT)
    script.wait(timeout=60)  # the script saved its results and ended: torchdoctor is saving
    # torchdoctor polls its child every 50 ms (launch.child._wait) and, until it has seen the end,
    # forwards stop signals to the ended script's group, where they count as forwarded and print
    # nothing; a second Ctrl-C sent within those 50 ms failed this test once under a loaded suite
    time.sleep(0.2)
    assert run.proc.poll() is None, "torchdoctor ended before the second Ctrl-C could be tested"
    run.signal(signal.SIGINT)
    status, stderr, record = run.finish()
    assert status == 130, stderr
    assert "SIGINT received; saving what was measured" in stderr
    assert record is not None and record.exit.reason == "interrupted"
    assert run.stored() == [record.run_id]


@pytest.mark.parametrize("how", ["SIGKILL", "SIGSEGV"])
def test_the_timing_window_survives_a_sigkill_or_a_crash_after_it(tmp_path, how):
    run = Diagnose(tmp_path, WINDOW_THEN_MORE, "12", "segv" if how == "SIGSEGV" else "train")
    if how == "SIGKILL":
        psutil.Process(run.ready()).kill()  # step 12: the 6-step window ended at step 8
    status, stderr, record = run.finish()
    assert record.exit.reason == "killed" and record.exit.signal == how
    assert status == record.exit.status == 128 + signal.Signals[how]
    assert how in record.exit.message and "12 steps" in record.exit.message
    assert record.summary.num_steps == 6 and record.step_detection == "optimizer"
    assert all(step.loss is not None for step in record.steps)  # read at the window's end
    assert run.stored() == [record.run_id]


def test_a_script_that_ignores_stops_is_killed_with_its_helpers_at_the_third(tmp_path):
    run = Diagnose(tmp_path, LONG, "4", "ignore")
    run.ready()
    start = time.monotonic()
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):  # three distinct: none coalesced
        run.signal(sig)
    status, stderr, record = run.finish()
    assert time.monotonic() - start < 15  # the grace period was not waited out
    assert record.exit.reason == "killed" and "torchdoctor killed it" in record.exit.message
    assert record.summary.num_steps >= 2  # from the stream
    assert not [pid for pid in run.pids if _alive(pid)]


def test_when_torchdoctor_itself_is_killed_the_script_and_its_helpers_end_too(tmp_path):
    run = Diagnose(tmp_path, LONG, "4")
    run.ready()
    run.signal(signal.SIGKILL)
    run.finish()
    processes = [psutil.Process(pid) for pid in run.pids if _alive(pid)]
    _, alive = psutil.wait_procs(processes, timeout=60)
    assert not [p for p in alive if _alive(p.pid)], "orphans of a killed torchdoctor kept running"
