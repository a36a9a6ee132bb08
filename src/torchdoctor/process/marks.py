"""The processes an owned child started, found by its mark and ended: by torchdoctor when the child
has ended (torchdoctor.launch.child), and by the child itself when torchdoctor died first
(`end_marked`).

Every process an owned child starts inherits OWNER_ENV (a unique value per child) in its
environment, even in a session of its own (as torchrun starts its ranks, or a daemon that
double-forked away), so the mark finds what the process group and the process tree miss.
"""

from __future__ import annotations

import os
from typing import Callable

import psutil

#: Environment variable marking every process an owned child starts (a unique value per child).
OWNER_ENV = "TORCHDOCTOR_OWNER"
#: How long a process being ended gets between SIGTERM and SIGKILL.
ORPHAN_GRACE_S = 2.0


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
    return [p for p in found.values() if _alive(p)]


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
    mark (its helpers, DataLoader workers, what they started); returns how many."""
    mark = os.environ.get(OWNER_ENV)
    return end(marked(mark, None)) if mark else 0


def _alive(process: psutil.Process) -> bool:
    try:
        return process.is_running() and process.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def _quietly(action: Callable[[], object]) -> None:
    try:
        action()
    except psutil.Error:
        pass
