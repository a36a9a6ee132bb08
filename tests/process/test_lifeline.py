"""The lifeline: a child knows when the torchdoctor that started it has died, even while the dying
process still has threads ending (then the child has not been reparented yet)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from torchdoctor.process.lifeline import torchdoctor_gone

#: The child: waits until its parent's main thread has ended, then says what `torchdoctor_gone`
#: and `getppid` see. Its parent is still a process of two threads: getppid still names it.
CHILD = textwrap.dedent("""\
    import os, sys, time
    from torchdoctor.process.lifeline import torchdoctor_gone
    parent = int(sys.argv[1])
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        with open(f"/proc/{parent}/stat") as stat:
            if stat.read().rsplit(")", 1)[1].split()[0] == "Z":
                break
        time.sleep(0.01)
    print(torchdoctor_gone(parent), os.getppid() == parent, flush=True)
""")
#: The parent: starts the child, keeps a second thread alive, and ends its main thread alone
#: (pthread_exit), as the main thread of a SIGKILLed process can end before its other threads.
PARENT = textwrap.dedent("""\
    import ctypes, os, subprocess, sys, threading, time
    child = subprocess.Popen([sys.executable, "-c", sys.argv[1], str(os.getpid())])
    threading.Thread(target=child.wait).start()  # the thread left running until the child ends
    time.sleep(0.2)
    ctypes.CDLL(None).pthread_exit(None)
""")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the lifeline is Linux only (prctl, /proc)")
def test_a_parent_whose_main_thread_ended_is_gone_before_the_child_is_reparented():
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.run([sys.executable, "-c", PARENT, CHILD], capture_output=True, text=True, timeout=60, env=env)
    assert proc.stdout.split() == ["True", "True"], proc.stdout + proc.stderr  # gone, not yet reparented


def test_a_live_parent_is_not_gone_and_a_process_that_is_not_our_parent_is():
    assert not torchdoctor_gone(os.getppid())
    assert not torchdoctor_gone(None)
    assert torchdoctor_gone(os.getpid())  # not our parent: we were "reparented" from it
