"""A child process torchdoctor owns: started in its own session (so its own process group), sent
our stop signals, waited for within a grace period, and never outlived by anything it started.

Why: with the script in torchdoctor's process group, `kill -TERM torchdoctor` ended torchdoctor
at once and left the script running under PID 1 with nothing recorded; a SIGINT sent to
torchdoctor alone never reached the script. Now:
  * every stop signal torchdoctor receives (SIGINT, SIGTERM, SIGHUP; launch.stops) is sent to the
    child's process group, which the script saves its results on;
  * `timeout_s` sends SIGINT to the group, like a Ctrl-C;
  * STOP_GRACE_S after the first stop, or at the third stop signal, the group and every process
    the child started are killed;
  * when the child has ended, whatever it left behind is sent SIGTERM, then SIGKILL
    marks.ORPHAN_GRACE_S later, and scanned for again until nothing is left.
"What it started" is every process in the child's group, its descendants, and every process whose
environment carries this child's mark (process.marks: inherited by anything it starts, even in a
session of its own, as torchrun starts its ranks, or a daemon that double-forked away), and, on
Linux, every orphan torchdoctor adopted as the subreaper of its descendants while the child ran
(a helper started with a clean environment in a session of its own sheds the mark and the group,
not that).
  * the child asks the kernel for SIGTERM should torchdoctor itself be killed (process.lifeline),
    and then ends what it started itself (`process.marks.end_marked`).
A child in its own session cannot read from the terminal (reads fail with EIO instead of
blocking); output to it is unchanged. torchrun starts its ranks the same way.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
import uuid
from dataclasses import dataclass
from typing import Callable, Mapping, Protocol, Sequence

import psutil

from torchdoctor.launch.stops import forwarding
from torchdoctor.process import marks
from torchdoctor.process.lifeline import PARENT_PID_ENV
from torchdoctor.process.marks import OWNER_ENV

#: After the first stop (a forwarded signal or the timeout), how long the child may take to save
#: its results before it is killed with everything it started.
STOP_GRACE_S = 15.0
#: The stop signal at which the child is killed at once (the first two are forwarded).
KILL_AT_STOP = 3


@dataclass(frozen=True, slots=True)
class ChildEnd:
    """How an owned child ended."""

    returncode: int
    """Popen's: the exit code, or -N when signal N ended it."""
    signals: tuple[int, ...] = ()
    """Stop signals torchdoctor received and passed on while the child ran."""
    timed_out: bool = False
    """The timeout expired and the child was sent SIGINT."""
    killed: bool = False
    """torchdoctor killed the child (grace period over, or the third stop signal)."""
    orphans: int = 0
    """Processes the child left running, ended by torchdoctor after it."""


class OwnedProcess(Protocol):
    """What ownership needs of a started child: `subprocess.Popen` has it, and so has a fork
    server's child (launch.forkserver), which is not our own child process."""

    @property
    def pid(self) -> int: ...

    def wait(self, timeout: float | None = None) -> int:
        """The return code (-N: signal N); raises subprocess.TimeoutExpired after `timeout` s."""
        ...


#: Starts the child with the environment it is given (the caller's, plus the marks of ownership).
#: The child must lead a session of its own: its pid is its process group's id.
Starter = Callable[[dict[str, str]], OwnedProcess]


class _Family:
    """The child and everything it started (see the module docstring)."""

    def __init__(self, proc: OwnedProcess, mark: str, before: set[int]) -> None:
        self.proc = proc
        self.pgid = proc.pid  # start_new_session: the child leads its own group
        self.mark = mark
        self.before = before | {proc.pid}  # not its family: what was there before, and the child (reaped by its owner)
        self.groups: set[int] = set()  # process groups of adopted processes that ended (marks.adopted)

    def signal_group(self, sig: int) -> None:
        try:
            os.killpg(self.pgid, sig)
        except (ProcessLookupError, PermissionError):
            pass

    def members(self) -> list[psutil.Process]:
        """Live processes the child started, itself included while it runs: marked, in its group,
        below it, or orphans torchdoctor adopted since it started."""
        found = {p.pid: p for p in marks.marked(self.mark, self.pgid, root=self.proc.pid)}
        found.update((p.pid, p) for p in marks.adopted(self.before, self.groups))
        return list(found.values())

    def kill(self) -> None:
        """SIGKILL the group and every member (psutil checks that a pid was not reused)."""
        self.signal_group(signal.SIGKILL)
        marks.kill(self.members())
        marks.signal_groups(self.groups, signal.SIGKILL)

    def end_leftovers(self) -> int:
        """SIGTERM what the child left running, SIGKILL what survives marks.ORPHAN_GRACE_S and
        what each later scan finds until one finds nothing; how many."""
        return marks.end_until_quiet(self.members, self.groups)


def run_owned(command: Sequence[str], env: Mapping[str, str], *, timeout_s: float | None = None,
              cwd: str | None = None, log_path: str | None = None) -> ChildEnd:
    """Run `command` as an owned child (see the module docstring) and return how it ended. The
    command's process must call `lifeline.die_with_torchdoctor` (the bootstrap, launch.apply and
    `python -m torchdoctor.process.lifeline` do). `cwd`: its working folder (None: ours); `log_path`: a
    file its stdout and stderr are appended to, stdin then /dev/null (None: ours, passed through)."""
    return own(lambda marked: _popen(command, marked, cwd, log_path), env, timeout_s=timeout_s)


def _popen(command: Sequence[str], env: dict[str, str], cwd: str | None,
           log_path: str | None) -> subprocess.Popen[bytes]:
    if log_path is None:
        return subprocess.Popen(list(command), env=env, cwd=cwd, start_new_session=True)
    with open(log_path, "ab") as log:
        return subprocess.Popen(list(command), env=env, cwd=cwd, start_new_session=True, stdin=subprocess.DEVNULL,
                                stdout=log, stderr=log)


def own(start: Starter, env: Mapping[str, str], *, timeout_s: float | None = None) -> ChildEnd:
    """`run_owned` for a child that `start` starts (a fork server's child: launch.forkserver).
    `start` gets `env` with OWNER_ENV and PARENT_PID_ENV added, must start the child in a session
    of its own with that environment, and may replace PARENT_PID_ENV by the pid of the child's
    actual parent (the lifeline compares it with the child's parent)."""
    mark = f"{os.getpid()}-{uuid.uuid4().hex}"
    env = {**env, OWNER_ENV: mark, PARENT_PID_ENV: str(os.getpid())}
    received: list[int] = []
    early: list[int] = []  # arrived while the child was being started
    family: list[_Family] = []

    def send(sig: int) -> None:
        received.append(sig)
        if family:
            family[0].signal_group(sig)
        else:
            early.append(sig)

    adopting = marks.adopt_orphans()
    try:
        with forwarding(send):
            proc = start(env)  # may start a fork server first: ours, not the child's family
            before = marks.descendants() - marks.descendants(proc.pid)
            family.append(_Family(proc, mark, before))
            for sig in early:
                family[0].signal_group(sig)
            end = _wait(family[0], received, timeout_s)
        orphans = family[0].end_leftovers()
    finally:
        if adopting:
            marks.adopt_orphans(False)
    return ChildEnd(end.returncode, tuple(received), end.timed_out, end.killed, orphans)


def _wait(family: _Family, received: list[int], timeout_s: float | None) -> ChildEnd:
    proc = family.proc
    start = time.monotonic()
    timed_out = killed = False
    first_stop: float | None = None
    while True:
        try:
            return ChildEnd(proc.wait(timeout=0.05), timed_out=timed_out, killed=killed)
        except subprocess.TimeoutExpired:
            pass
        now = time.monotonic()
        if timeout_s is not None and not timed_out and now - start >= timeout_s:
            timed_out = True
            family.signal_group(signal.SIGINT)
        if first_stop is None and (received or timed_out):
            first_stop = now
        if not killed and first_stop is not None and (
                len(received) >= KILL_AT_STOP or now - first_stop >= STOP_GRACE_S):
            killed = True
            family.kill()
