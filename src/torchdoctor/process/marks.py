"""The processes an owned child started, found by its mark and ended: by torchdoctor when the child
has ended (torchdoctor.launch.child), and by the child itself when torchdoctor died first
(`end_marked`).

Every process an owned child starts inherits OWNER_ENV (a unique value per child) in its
environment, even in a session of its own (as torchrun starts its ranks, or a daemon that
double-forked away), so the mark finds what the process group and the process tree miss.
A process can shed the mark (started with a clean environment) and the group (a session of its
own) and leave the tree (a double fork), but not its subreaper: torchdoctor asks to be one
(`adopt_orphans`, Linux's PR_SET_CHILD_SUBREAPER), so every orphan below it becomes its child
(`adopted`). What is found is ended until a scan finds nothing (`end_until_quiet`), which also
catches a process that keeps forking to change its pid.
"""

from __future__ import annotations

import os
import signal
import time
from typing import Callable

import psutil

from torchdoctor.process.prctl import prctl

#: Environment variable marking every process an owned child starts (a unique value per child).
OWNER_ENV = "TORCHDOCTOR_OWNER"
#: How long a process being ended gets between SIGTERM and SIGKILL.
ORPHAN_GRACE_S = 2.0
#: After the grace, how long SIGKILL rounds go on while each scan still finds a process.
QUIET_WITHIN_S = 10.0
_PR_SET_CHILD_SUBREAPER = 36


def marked(mark: str, pgid: int | None, root: int | None = None) -> list[psutil.Process]:
    """Live processes (never this one) descending from `root`, in group `pgid` or marked `mark`."""
    found: dict[int, psutil.Process] = {}
    if root is not None:
        try:
            process = psutil.Process(root)
            found.update((p.pid, p) for p in [process, *process.children(recursive=True)])
        except psutil.Error:
            pass
    me = os.getpid()
    for process in psutil.process_iter():
        if process.pid in found or process.pid == me:
            continue
        try:
            if (pgid is not None and os.getpgid(process.pid) == pgid) or process.environ().get(OWNER_ENV) == mark:
                found[process.pid] = process
        except (OSError, psutil.Error):
            continue
    return [p for p in found.values() if p.pid != me and _alive(p)]


def adopt_orphans(on: bool = True) -> bool:
    """Make this process (with `on` False: no longer) the subreaper of its descendants: an orphan
    below it is reparented to it, not to init. True when the kernel accepted (Linux only)."""
    return prctl(_PR_SET_CHILD_SUBREAPER, int(on))


def descendants(root: int | None = None) -> set[int]:
    """The pids of the descendants of `root` (None: this process)."""
    return set(_descendants(os.getpid() if root is None else root))


def adopted(before: set[int], groups: set[int]) -> list[psutil.Process]:
    """This process's live descendants that were not there `before` (orphans it adopted as their
    subreaper, and what they started). The adopted ones that have ended are reaped, and their
    process groups added to `groups`: a process that forks away every few milliseconds is gone
    by the time a scan of every process has found it (50-80 ms on a busy machine), but each fork
    leaves its parent here as a zombie, and its forks stay in that group."""
    me, found = os.getpid(), []
    for pid in _descendants(me):
        if pid in before:
            continue
        try:
            process = psutil.Process(pid)
            if _alive(process):
                found.append(process)
            elif process.ppid() == me:
                groups.add(os.getpgid(pid))
                _reap(pid)
        except (psutil.Error, OSError):
            continue
    return found


def _descendants(pid: int) -> list[int]:
    try:
        return [p.pid for p in psutil.Process(pid).children(recursive=True)]
    except psutil.Error:
        return []


def end_until_quiet(find: Callable[[], list[psutil.Process]], groups: set[int] | None = None) -> int:
    """`end` what `find` returns and the process `groups` (which `find` may add to), then SIGKILL
    what each new scan finds until one finds nothing and the groups are empty (QUIET_WITHIN_S at
    most); returns how many distinct processes were found running."""
    groups = set() if groups is None else groups
    found = find()
    seen = {p.pid for p in found}
    running_groups = signal_groups(groups, signal.SIGTERM)  # a forking process's, seen by its zombies
    if not found and not running_groups:
        return 0  # quiet at the first scan
    end(found)
    deadline = time.monotonic() + QUIET_WITHIN_S
    while time.monotonic() < deadline:
        found = find()
        if not found and not signal_groups(groups, signal.SIGKILL):
            break
        seen.update(p.pid for p in found)
        kill(found)
        psutil.wait_procs(found, timeout=0.2)
    return len(seen) + running_groups


def signal_groups(groups: set[int], sig: int) -> int:
    """Send `sig` to each process group (never this process's own); how many had a process."""
    sent = 0
    for group in groups - {os.getpgrp(), 0, 1}:
        try:
            os.killpg(group, sig)
            sent += 1
        except OSError:
            pass
    return sent


def end(processes: list[psutil.Process]) -> int:
    """SIGTERM each, SIGKILL what survives ORPHAN_GRACE_S; returns how many there were."""
    if not processes:
        return 0
    for process in processes:
        _quietly(process.terminate)
    _, alive = psutil.wait_procs(processes, timeout=ORPHAN_GRACE_S)
    kill(alive)
    psutil.wait_procs(alive, timeout=ORPHAN_GRACE_S)
    return len(processes)


def kill(processes: list[psutil.Process]) -> None:
    """SIGKILL each (psutil checks that a pid was not reused); one already gone is skipped."""
    for process in processes:
        _quietly(process.kill)


def end_marked() -> int:
    """In an owned child whose torchdoctor died: end every other process carrying this child's
    mark, and this process's descendants (its helpers, DataLoader workers, what they started,
    with a clean environment too); returns how many."""
    mark = os.environ.get(OWNER_ENV)
    return end_until_quiet(lambda: marked(mark, None, root=os.getpid())) if mark else 0


def _alive(process: psutil.Process) -> bool:
    try:
        return process.is_running() and process.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def _reap(pid: int) -> None:
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass


def _quietly(action: Callable[[], object]) -> None:
    try:
        action()
    except psutil.Error:
        pass
