"""Child-process entry: run a script exactly as `python SCRIPT ARGS` would, under instrumentation.

`python -c LAUNCH SCRIPT [ARGS...]` (launch.entry), with the ObserveConfig as JSON in the environment
variable `TORCHDOCTOR_OBSERVE`. The script runs as `__main__` with `sys.argv` =
[SCRIPT, ARGS...] (SCRIPT as typed) and `sys.path[0]` = its folder; cwd, stdout and stderr are the
parent's. When every window is measured, the step hook raises `StopObservation`, a BaseException,
so `except Exception` in the script does not swallow it and its `finally` blocks run. Whatever
happens (the script returns, raises, calls sys.exit or os._exit, Ctrl-C, SIGTERM or SIGHUP, which
raise `StopSignal` here so that they unwind like Ctrl-C), this rank's results are written to
`<out_dir>/rank<RANK>.json` before the process ends; each measured step was streamed to the run
folder as it happened (observe.stream), for a SIGKILL or a crash that leaves no time to save.
The process asks for SIGTERM should torchdoctor die first (torchdoctor.process.lifeline).
"""

from __future__ import annotations

import os
import signal
import sys
import traceback
from pathlib import Path
from typing import NoReturn

from torchdoctor.observe.config import CONFIG_ENV, ObserveConfig
from torchdoctor.observe.session import ObservationSession
from torchdoctor.process.lifeline import die_with_torchdoctor, torchdoctor_gone
from torchdoctor.process.marks import end_marked
from torchdoctor.process.scriptrun import MainScript, ScriptDoesNotCompile, enter_main, leave_main

#: Signals that end the script like Ctrl-C does: its results are saved (SIGINT is Python's own).
_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class StopObservation(BaseException):
    """Raised from a step hook once every window is measured, to end the script cleanly."""


class StopSignal(BaseException):
    """SIGTERM or SIGHUP arrived: raised in the script so that it unwinds and its results are
    saved, instead of the process vanishing (the default action) with nothing recorded."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def _raise_stop(signum: int, frame: object) -> None:
    raise StopSignal(signum)


def _script_traceback(exc: BaseException, script: Path) -> str:
    """The traceback Python would print for the script alone, without torchdoctor's frames."""
    tb_exc = traceback.TracebackException.from_exception(exc)
    frames = tb_exc.stack
    for index, frame in enumerate(frames):
        if Path(frame.filename).resolve() == script:
            tb_exc.stack = traceback.StackSummary.from_list(frames[index:])
            break
    return "".join(tb_exc.format())


def _ended(exc: BaseException | None, script: Path, session: ObservationSession) -> tuple[str, int, str | None]:
    """How the script ended, from what it raised (None: it returned): (how, exit code, traceback)."""
    if exc is None:
        return "script_finished", 0, None
    if isinstance(exc, StopObservation):
        return "completed", 0, None
    if isinstance(exc, SystemExit):
        code = exc.code
        if code is None or isinstance(code, int):
            return "sys_exit", int(code or 0), None
        print(code, file=sys.stderr)
        return "sys_exit", 1, None
    if isinstance(exc, KeyboardInterrupt):
        session.stop_signal = signal.SIGINT
        return "interrupted", 128 + signal.SIGINT, None
    if isinstance(exc, StopSignal):
        session.stop_signal = exc.signum
        return "interrupted", 128 + exc.signum, None
    text = _script_traceback(exc, script)  # the script's own error: shown as Python would show it
    sys.stderr.write(text)
    return "script_error", 1, text


class Observed:
    """This process's observation of one script, in the order launch.entry's LAUNCH drives it:
    `begin` (set-up), the script's code run by LAUNCH itself, `ended` (how it ended), `exit`."""

    def __init__(self, argv: list[str]) -> None:
        self.parent = die_with_torchdoctor(signal.SIGTERM)
        for sig in _STOP_SIGNALS[1:]:
            signal.signal(sig, _raise_stop)
        os.register_at_fork(after_in_child=_forked)
        self.path = Path(argv[0]).resolve()
        sys.path[0] = str(self.path.parent)
        self.session = ObservationSession(ObserveConfig.from_env(os.environ[CONFIG_ENV]), self.path,
                                          stop=StopObservation)
        self.how, self.code, self.text = "killed", 1, None
        self.script: MainScript | None = None
        try:
            self.session.start()
        except Exception as exc:  # torchdoctor's own set-up (e.g. a knob) failed: say why, run nothing
            self.text = "".join(traceback.format_exception(exc))
            sys.stderr.write(f"torchdoctor could not set up the observation:\n{self.text}")
            self.how = "setup_error"
        except BaseException as exc:  # stopped (Ctrl-C, SIGTERM) while setting up: ends as it would later
            self.how, self.code, self.text = _ended(exc, self.path, self.session)
        else:
            self._enter(argv)

    def _enter(self, argv: list[str]) -> None:
        """Make the script ready to run; one that does not compile ends here as under Python (its
        error on stderr, exit 1), and the results say so."""
        try:
            self.script = enter_main(argv[0], argv)
        except ScriptDoesNotCompile as exc:
            sys.stderr.write(exc.text)
            self.how, self.code, self.text = "script_error", 1, exc.text
            self.session.compile_error = exc.where

    def ended(self, exc: BaseException | None) -> None:
        """The script returned (None) or raised `exc`."""
        if self.script is not None:
            leave_main(self.script)
            self.how, self.code, self.text = _ended(exc, self.path, self.session)

    def exit(self) -> NoReturn:
        """Write this rank's results and end the process with the script's exit code.

        Only in the observed process itself: a child the script forked (`os.fork()`) runs this same
        code when it ends, and must neither overwrite the results nor end the script's family."""
        if os.getpid() != self.session.pid:
            sys.exit(self.code)
        for sig in _STOP_SIGNALS:  # a second stop must not lose the results
            signal.signal(sig, signal.SIG_IGN)
        self.session.finish(self.how, self.code, self.text)
        if torchdoctor_gone(self.parent):  # nobody is left to end what the script started: we do
            end_marked()
        sys.stdout.flush()
        sys.stderr.flush()
        if self.how == "completed" and _process_group_alive():
            # We stopped a distributed script mid-run: its process group was never destroyed, and
            # gloo aborts the process (SIGABRT) in interpreter teardown on torch 2.13. The results are
            # written and the streams flushed, so leave without that teardown.
            os._exit(self.code)
        sys.exit(self.code)


def _forked() -> None:
    """In a child the script forked: SIGTERM and SIGHUP end it as they would a child of plain
    Python (the default action), instead of unwinding it into the observation's exit path. A
    handler the script installed itself is left alone."""
    for sig in _STOP_SIGNALS[1:]:
        if signal.getsignal(sig) is _raise_stop:
            signal.signal(sig, signal.SIG_DFL)


def begin(argv: list[str]) -> Observed:
    """Set up the observation of `argv` = [SCRIPT, ARGS...] (exit 2 without a script)."""
    if not argv:
        print("usage: python -c LAUNCH SCRIPT [ARGS...] (torchdoctor.observe.bootstrap)", file=sys.stderr)
        raise SystemExit(2)
    return Observed(argv)


def _process_group_alive() -> bool:
    import torch.distributed as dist

    return dist.is_available() and dist.is_initialized()
