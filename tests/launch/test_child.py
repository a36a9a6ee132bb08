"""run_owned on small plain-Python children (no torch): stops sent to us reach the child's
process group, the timeout is SIGINT, a child that ignores stops is killed at the third, and
what a child leaves running, even in a session of its own, is ended with it."""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from pathlib import Path

import psutil

from torchdoctor.launch.child import run_owned


def _child(code: str) -> list[str]:
    return [sys.executable, "-c", code]


def _when_file_appears(path: Path, action) -> threading.Thread:  # type: ignore[no-untyped-def]
    """Run `action` once `path` exists (the child's readiness), from a helper thread."""
    def watch() -> None:
        deadline = time.monotonic() + 30
        while not path.exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        action()

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    return thread


def _ready_then(ready: Path, rest: str) -> str:
    """Python code: `rest`, then touch `ready` (the readiness file), then sleep a minute."""
    return (f"import pathlib, signal, time, os, subprocess, sys\n{rest}\n"
            f"pathlib.Path({str(ready)!r}).touch()\ntime.sleep(60)")


def test_a_stop_sent_to_us_is_passed_on_to_the_childs_group(tmp_path):
    ready = tmp_path / "ready"
    _when_file_appears(ready, lambda: os.kill(os.getpid(), signal.SIGTERM))
    start = time.monotonic()
    end = run_owned(_child(_ready_then(ready, "")), os.environ)
    assert end.returncode == -signal.SIGTERM and end.signals == (signal.SIGTERM,)
    assert not end.killed and time.monotonic() - start < 30


def test_the_timeout_sends_sigint_and_a_child_that_ignores_it_is_killed_after_the_grace(tmp_path, monkeypatch):
    import torchdoctor.launch.child as child

    monkeypatch.setattr(child, "STOP_GRACE_S", 0.5)
    interrupted = run_owned(_child("import time; time.sleep(60)"), os.environ, timeout_s=0.5)
    assert interrupted.timed_out and interrupted.returncode != 0 and not interrupted.killed
    stubborn = run_owned(["sh", "-c", 'trap "" INT; exec "$@"', "sh", *_child("import time; time.sleep(60)")],
                         os.environ, timeout_s=0.5)
    assert stubborn.timed_out and stubborn.killed and stubborn.returncode == -signal.SIGKILL


def test_a_child_that_ignores_stops_is_killed_at_the_third(tmp_path):
    ready = tmp_path / "ready"
    ignore = "for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP): signal.signal(s, signal.SIG_IGN)"

    def three_stops() -> None:
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):  # distinct: none coalesced
            os.kill(os.getpid(), sig)

    _when_file_appears(ready, three_stops)
    end = run_owned(_child(_ready_then(ready, ignore)), os.environ)
    assert end.killed and end.returncode == -signal.SIGKILL and len(end.signals) == 3


def test_what_the_child_leaves_running_is_ended_even_in_a_session_of_its_own(tmp_path):
    pids = tmp_path / "pids"
    code = ("import subprocess, sys, pathlib\n"
            "sleep = [sys.executable, '-c', 'import time; time.sleep(60)']\n"
            "helpers = [subprocess.Popen(sleep), subprocess.Popen(sleep, start_new_session=True)]\n"
            f"pathlib.Path({str(pids)!r}).write_text(' '.join(str(h.pid) for h in helpers))\n")
    end = run_owned(_child(code), os.environ)
    assert end.returncode == 0 and end.orphans == 2
    for pid in map(int, pids.read_text().split()):
        assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
