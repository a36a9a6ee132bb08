"""What an owned child started is found by its mark, even in a session of its own, and ended."""

from __future__ import annotations

import os
import subprocess
import sys

from torchdoctor.process.marks import OWNER_ENV, end_marked, marked


def _sleeper(mark: str) -> subprocess.Popen[bytes]:
    """A process in a session of its own (outside our group and, once reparented, our tree)."""
    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"],
                            env={**os.environ, OWNER_ENV: mark}, start_new_session=True)


def test_a_marked_process_is_found_by_its_mark_and_ended_by_the_child_that_marked_it():
    mark = f"test-{os.getpid()}"
    helper = _sleeper(mark)
    try:
        assert [p.pid for p in marked(mark, None)] == [helper.pid]
        # The child that marked it calls end_marked: a process of its own, whose descendants are
        # only its own (the test process's are not, e.g. a fork server another test started).
        child = subprocess.run([sys.executable, "-c", "from torchdoctor.process.marks import end_marked; "
                                "print(end_marked())"], env={**os.environ, OWNER_ENV: mark},
                               capture_output=True, text=True, timeout=60, check=True)
        assert child.stdout.split() == ["1"]
        assert marked(mark, None) == []  # ended (and reaped by psutil, which waited for it)
    finally:
        helper.kill()
        helper.wait()


def test_a_process_without_a_mark_ends_nothing(monkeypatch):
    monkeypatch.delenv(OWNER_ENV, raising=False)
    assert end_marked() == 0
