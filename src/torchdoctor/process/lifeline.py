"""A child process that ends with torchdoctor: `die_with_parent()` asks the kernel to signal it
when the process that started it dies.

Why: torchdoctor forwards its stop signals to the script and waits for it (launch.child), but a
SIGKILL of torchdoctor itself (the OOM killer, `kill -9`) runs none of its code; without this the
script would run on under PID 1, owned by nobody. Linux only (prctl PR_SET_PDEATHSIG); elsewhere a
no-op. Called first thing in the child, by the bootstrap and by `launch.apply`; a launcher that is
not ours (torchrun) is started through `python -m torchdoctor.process.lifeline MODULE ARGS...`, which
asks for the signal and then runs MODULE as `python -m MODULE ARGS...` would.
"""

from __future__ import annotations

import os
import runpy
import signal
import sys
import threading
import time

from torchdoctor.process.prctl import prctl

_PR_SET_PDEATHSIG = 1
#: Set by the parent for a child it starts directly (not through torchrun): the parent's pid.
PARENT_PID_ENV = "TORCHDOCTOR_PARENT_PID"


#: After torchdoctor died and the lifeline's signal was sent, how long this process may take to
#: save and end before it is killed with everything it started (a script may ignore SIGTERM).
LIFELINE_GRACE_S = 5.0
#: How often the watch (`_kill_when_orphaned`) looks whether torchdoctor is still there.
_WATCH_EVERY_S = 0.5


def die_with_parent(sig: int = signal.SIGTERM, parent_pid: int | None = None) -> bool:
    """Have `sig` sent to this process when its parent dies; True when the kernel accepted it.

    `parent_pid`: the pid that started us; when it is already gone (it died before the request
    was made), the signal is sent at once, as it would have been a moment later."""
    if not prctl(_PR_SET_PDEATHSIG, int(sig)):
        return False
    if parent_pid is not None and os.getppid() != parent_pid:
        os.kill(os.getpid(), sig)
    return True


def die_with_torchdoctor(sig: int = signal.SIGTERM) -> int | None:
    """`die_with_parent`, checking the parent pid the parent left in PARENT_PID_ENV (taken out of
    the environment, so that what this process starts does not check it); returns that pid.

    The signal can be ignored (a script that sets SIGTERM to SIG_IGN), so a daemon thread also
    watches the parent: LIFELINE_GRACE_S after torchdoctor is gone, it ends what this process
    started (process.marks) and kills this process. The thread wakes every half second, holds
    the GIL for microseconds, and does not exist in the children this process forks."""
    value = os.environ.pop(PARENT_PID_ENV, "")
    parent = int(value) if value.isdigit() else None
    if die_with_parent(sig, parent):
        watched = parent if parent is not None else os.getppid()
        threading.Thread(target=_kill_when_orphaned, args=(watched,), name="torchdoctor-lifeline",
                         daemon=True).start()
    return parent


def _kill_when_orphaned(parent: int) -> None:
    """Wait until `parent` is gone, give this process LIFELINE_GRACE_S to end by itself, then
    end what it started and SIGKILL it."""
    while not torchdoctor_gone(parent):
        time.sleep(_WATCH_EVERY_S)
    time.sleep(LIFELINE_GRACE_S)
    from torchdoctor.process.marks import end_marked  # psutil, only on this rare path

    end_marked()
    os.kill(os.getpid(), signal.SIGKILL)


def torchdoctor_gone(parent: int | None) -> bool:
    """Whether the torchdoctor that started this process has died: this process was reparented, or
    the parent's main thread has ended.

    The second, because the kernel sends the lifeline's signal when the *thread* that started us
    ends, and reparents us to another thread of the same process while any is left: a SIGKILLed
    torchdoctor ends its threads one by one, and until the last has ended `getppid()` still names
    it. Seen beside a busy machine (1 kill in 10): the script had written its results and
    found its parent "alive" (its main thread a zombie, two threads still ending), so it left its
    helpers running."""
    return parent is not None and (os.getppid() != parent or _main_thread_ended(parent))


def _main_thread_ended(pid: int) -> bool:
    """The process's main thread has exited (Linux: its /proc state is zombie or dead, or it is gone).
    False when /proc cannot tell: then only the reparenting says torchdoctor died."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as stat:
            state = stat.read().rsplit(")", 1)[1].split()[0]  # the name, in parentheses, may hold spaces
    except (FileNotFoundError, ProcessLookupError):  # gone, or being reaped (ESRCH on a read)
        return True
    except (OSError, IndexError):
        return False
    return state in ("Z", "X", "x")


def main(argv: list[str]) -> None:
    if not argv:
        print("usage: python -m torchdoctor.process.lifeline MODULE [ARGS...]", file=sys.stderr)
        sys.exit(2)
    die_with_torchdoctor(signal.SIGTERM)
    sys.argv = list(argv)
    runpy.run_module(argv[0], run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main(sys.argv[1:])
