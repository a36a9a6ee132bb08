"""A fork server: one interpreter imports torch and torchdoctor's bootstrap once, then forks a fresh
child for each observation, so that an observation costs its steps and not 3-5 s of imports.

Used where many short observations of the same script are run one after another (`torchdoctor
check`). Each child is a new process, as with `python -c LAUNCH SCRIPT` (launch.entry):
its own cwd, environment, `sys.argv`, `sys.path` (the script's folder first, then the given extra
entries), stdin from /dev/null, stdout and stderr to a log file (or the server's own), Python's
`random` and numpy's global generator reseeded from the OS. What differs from a plain start:
torch and torchdoctor are already imported (environment variables the script sets *before* its
`import torch` cannot change what torch read at import), the string-hash seed is the server's,
and exit handlers registered with `atexit` do not run (the results are written before the exit).
The script's code runs in the top frame of the server's program, as in `python -c LAUNCH` (SERVER).
CUDA is never initialised in the server, so children use the device as a fresh process does.

The child's environment is the server's own (what the interpreter, or a wrapper script standing for
it, started with) with the caller's changes applied: the variables the caller's environment adds,
changes or removes relative to the one it started the server with.

Protocol: the parent writes one JSON request per line to the server's stdin (`argv`,
`env_set`, `env_unset`, `cwd`, `path`, `log`); the server answers on a pipe, one JSON line each:
`{"ready": ...}` once after the imports, then per request `{"pid": N}` after the fork and
`{"pid": N, "returncode": R}` when the child has ended (R < 0: killed by signal -R). One child at a
time. The server ignores SIGINT and exits when its stdin closes.

Ownership (launch.child): the parent runs each child under `child.own`, so the child leads a
session of its own (`os.setsid`), stop signals reach it through torchdoctor, and what it leaves
running is ended. The server itself runs in a session of its own too (a Ctrl-C or SIGTERM sent to
torchdoctor's process group must not end it in the middle of a child's observation) and is killed
by the kernel should torchdoctor die (lifeline); its child, whose parent it is, then gets SIGTERM
from its own lifeline and ends what it started.
"""

from __future__ import annotations

import importlib
import json
import os
import select
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any, Mapping, Sequence

from torchdoctor.errors import TorchDoctorError
from torchdoctor.launch.entry import LAUNCH
from torchdoctor.process.lifeline import PARENT_PID_ENV, die_with_parent

#: The server's program, `python -c SERVER FD`: `serve`, and in each forked child what `python -c
#: LAUNCH SCRIPT ARGS` runs (launch.entry), in this program's top frame, so that the script's code sits
#: one frame from the top as in a plain observation (code that walks the stack pays per frame: anomaly
#: mode formats it at every autograd node). Not `-m` and a call from `serve`: that put seven frames of
#: the server's below the script.
#: The child leaves without the interpreter's teardown (about 1.1 s a child with torch loaded, where
#: os._exit takes 0.05 s): its results are written, and `check` forks two children a round.
SERVER = ("import os, sys\n"
          "from torchdoctor.launch.forkserver import serve\n"
          "sys.argv[1:] = serve(int(sys.argv[1]))\n"
          "try:\n" + textwrap.indent(LAUNCH, "    ") +
          "except SystemExit as exc:\n"
          "    sys.stdout.flush()\n"
          "    sys.stderr.flush()\n"
          "    os._exit(exc.code if isinstance(exc.code, int) else 1)\n")
#: How long the server may take to import torch and the bootstrap.
READY_TIMEOUT_S = 180.0
#: Imported by the server when they exist: what every observation would import again (torch.compile's
#: probe alone is about 4 s). None of them initialises CUDA or starts a thread.
PRELOAD = ("torch._dynamo.utils", "torch._logging", "torch.distributed._tools.mem_tracker")


class ForkServerError(TorchDoctorError):
    """The fork server could not start or stopped answering."""


class ForkedChild:
    """A child of the fork server, with the part of `subprocess.Popen`'s interface that
    `observe` uses: `pid`, `wait(timeout)`, `send_signal`, `terminate`, `kill`, `returncode`."""

    def __init__(self, server: ForkServer, pid: int) -> None:
        self.server = server
        self.pid = pid
        self.returncode: int | None = None

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is None:
            message = self.server._read(timeout)
            if message is None:
                raise subprocess.TimeoutExpired(f"fork server child {self.pid}", timeout or 0.0)
            self.returncode = int(message["returncode"])
            self.server._busy = False
        return self.returncode

    def send_signal(self, sig: int) -> None:
        if self.returncode is None:
            try:
                os.kill(self.pid, sig)
            except ProcessLookupError:
                pass

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


class ForkServer:
    """The parent's handle on one fork server (`start()` first, `close()` at the end)."""

    def __init__(self, python: str | None = None, env: Mapping[str, str] | None = None) -> None:
        self.python = python or sys.executable
        self.env = dict(env) if env is not None else None
        self._base_env: dict[str, str] = {}
        self.info: dict[str, Any] = {}
        self._proc: subprocess.Popen[bytes] | None = None
        self._answers: int | None = None
        self._buffer = b""
        self._busy = False
        self._lock = threading.Lock()

    def start(self) -> ForkServer:
        """Launch the server; returns at once (the imports go on in the background)."""
        if self._proc is not None:
            return self
        read_fd, write_fd = os.pipe()
        self._base_env = dict(self.env if self.env is not None else os.environ)
        try:
            self._proc = subprocess.Popen(
                [self.python, "-c", SERVER, str(write_fd)],
                stdin=subprocess.PIPE, pass_fds=(write_fd,), env=self.env, start_new_session=True,
            )
        except OSError as exc:
            os.close(read_fd)
            raise ForkServerError(f"cannot start the fork server with {self.python}: {exc}") from None
        finally:
            os.close(write_fd)
        self._answers = read_fd
        return self

    def wait_ready(self, timeout: float = READY_TIMEOUT_S) -> dict[str, Any]:
        """Block until the server has imported everything; its `{"ready": ...}` answer."""
        self.start()
        if not self.info:
            message = self._read(timeout)
            if message is None:
                raise ForkServerError(f"the fork server ({self.python}) was not ready after {timeout:g} s")
            if "error" in message:
                raise ForkServerError(f"the fork server ({self.python}) could not start: {message['error']}")
            self.info = message
        return self.info

    @property
    def alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def spawn(self, argv: Sequence[str], *, env: Mapping[str, str], cwd: str | Path,
              path: Sequence[str] = (), log: str | Path | None = None) -> ForkedChild:
        """Fork a child that observes argv = [SCRIPT, ARGS...] as LAUNCH does (SERVER); `env` is the
        environment the caller wants, applied as changes to the server's own (module docstring).
        The child's parent is the server: a PARENT_PID_ENV in `env` (the lifeline's check of the
        parent, launch.child.own) is given the server's pid."""
        info = self.wait_ready()
        if PARENT_PID_ENV in env:
            env = {**env, PARENT_PID_ENV: str(info["pid"])}
        with self._lock:
            if self._busy:
                raise ForkServerError("the fork server runs one child at a time")
            base = self._base_env
            request = {"argv": list(argv), "env_set": {k: v for k, v in env.items() if base.get(k) != v},
                       "env_unset": [k for k in base if k not in env], "cwd": str(cwd), "path": list(path),
                       "log": str(log) if log else None}
            assert self._proc is not None and self._proc.stdin is not None
            try:
                self._proc.stdin.write(json.dumps(request).encode() + b"\n")
                self._proc.stdin.flush()
            except OSError as exc:
                raise ForkServerError(f"the fork server ({self.python}) stopped: {exc}") from None
            answer = self._read(READY_TIMEOUT_S)
            if answer is None or "pid" not in answer:
                raise ForkServerError(f"the fork server ({self.python}) did not fork: {answer}")
            self._busy = True
            return ForkedChild(self, int(answer["pid"]))

    def close(self) -> None:
        """Stop the server (a child still running is left to end by itself)."""
        proc, self._proc = self._proc, None
        if proc is None:
            return
        try:
            if proc.stdin is not None:
                proc.stdin.close()
            proc.wait(timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            proc.kill()
            proc.wait()
        if self._answers is not None:
            os.close(self._answers)
            self._answers = None

    def __enter__(self) -> ForkServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _read(self, timeout: float | None) -> dict[str, Any] | None:
        """The next JSON answer; None at the timeout. Raises ForkServerError when the server died."""
        deadline = None if timeout is None else time.monotonic() + timeout
        assert self._answers is not None
        while b"\n" not in self._buffer:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            ready, _, _ = select.select([self._answers], [], [], left)
            if not ready:
                return None
            chunk = os.read(self._answers, 65536)
            if not chunk:
                code = self._proc.wait() if self._proc is not None else None
                raise ForkServerError(
                    f"the fork server ({self.python}) exited (status {code}); is torchdoctor importable "
                    "in that environment? Its error is printed above")
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        return json.loads(line)


# -- the server process --------------------------------------------------------------------------
def _answer(fd: int, message: dict[str, Any]) -> None:
    os.write(fd, json.dumps(message).encode() + b"\n")


def _become_child(request: dict[str, Any], answers: int) -> list[str]:
    """In the forked child: become the observed process (the module docstring) and return the
    script's [SCRIPT, ARGS...], which the server's program (SERVER) then runs in its own top frame.
    Never returns into the server's loop: a failure here ends the child."""
    try:
        os.close(answers)
        os.setsid()  # a process group of its own, as launch.child owns it
        signal.signal(signal.SIGINT, signal.default_int_handler)
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.close(devnull)
        if request.get("log"):
            log = os.open(request["log"], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
            os.dup2(log, 1)
            os.dup2(log, 2)
            os.close(log)
        os.chdir(request["cwd"])
        for name in request.get("env_unset") or []:
            os.environ.pop(name, None)
        os.environ.update(request.get("env_set") or {})
        sys.path[1:1] = list(request.get("path") or [])
        import random

        import numpy as np

        random.seed()
        np.random.seed()
        return list(request["argv"])
    except KeyboardInterrupt:  # a stop before the bootstrap took it over: end by SIGINT, as a plain Python
        _flush()  # does, so that the caller reads "interrupted", not a failure of the side
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    except BaseException:  # torchdoctor's own failure before the script: say so, as a plain start would
        import traceback

        traceback.print_exc()
    _flush()
    os._exit(1)


def _flush() -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass


def serve(answers: int) -> list[str]:
    """The server's loop. In the server it never returns: it exits when its stdin closes, and is
    killed when its parent dies (when that happened before it asked, its stdin is closed and it
    exits at once). In each forked child it returns the script's argv (`_become_child`)."""
    die_with_parent(signal.SIGKILL)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        import torch

        from torchdoctor.observe import bootstrap  # noqa: F401  (preloaded for the children)
    except BaseException as exc:  # report, then exit: the parent raises ForkServerError
        _answer(answers, {"error": f"{type(exc).__name__}: {exc}"})
        raise SystemExit(1) from None
    for name in PRELOAD:
        try:
            importlib.import_module(name)
        except Exception:  # an older torch without it: the child imports what it needs itself
            continue
    _answer(answers, {"ready": True, "pid": os.getpid(), "python": sys.version.split()[0],
                      "executable": sys.executable, "torch": torch.__version__})
    for line in sys.stdin.buffer:
        if not line.strip():
            continue
        request = json.loads(line)
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            return _become_child(request, answers)
        _answer(answers, {"pid": pid})
        _, status = os.waitpid(pid, 0)
        _answer(answers, {"pid": pid, "returncode": os.waitstatus_to_exitcode(status)})
    raise SystemExit(0)
