"""Child-process entry: run a script exactly as `python SCRIPT ARGS` would, under instrumentation.

`python -m torchdoctor.observe.bootstrap SCRIPT [ARGS...]`, with the ObserveConfig as JSON in the
environment variable `TORCHDOCTOR_OBSERVE`. The script runs as `__main__` with `sys.argv` =
[SCRIPT, ARGS...] (SCRIPT as typed) and `sys.path[0]` = its folder; cwd, stdout and stderr are the
parent's. When every window is measured, the step hook raises `StopObservation`, a BaseException,
so `except Exception` in the script does not swallow it and its `finally` blocks run. Whatever
happens (the script returns, raises, calls sys.exit or os._exit, Ctrl-C, SIGTERM or SIGHUP, which
raise `StopSignal` here so that they unwind like Ctrl-C), this rank's results are written to
`<out_dir>/rank<RANK>.json` before the process ends; each measured step was streamed to the run
folder as it happened (observe.stream), for a SIGKILL or a crash that leaves no time to save.
The process asks for SIGTERM should torchdoctor die first (torchdoctor.lifeline).
"""

from __future__ import annotations

import os
import signal
import sys
import traceback
from pathlib import Path
from typing import Any

from torchdoctor.lifeline import die_with_torchdoctor, torchdoctor_gone
from torchdoctor.observe.child import end_marked
from torchdoctor.observe.config import CONFIG_ENV, ObserveConfig
from torchdoctor.observe.session import ObservationSession
from torchdoctor.scriptrun import run_as_main

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


def _run_script(typed: str, argv: list[str], script: Path,
                session: ObservationSession) -> tuple[str, int, str | None]:
    """Run the script; returns (how it ended, exit code, traceback or None)."""
    try:
        run_as_main(typed, argv)
    except StopObservation:
        return "completed", 0, None
    except SystemExit as exc:
        code = exc.code
        if code is None or isinstance(code, int):
            return "sys_exit", int(code or 0), None
        print(code, file=sys.stderr)
        return "sys_exit", 1, None
    except KeyboardInterrupt:
        session.stop_signal = signal.SIGINT
        return "interrupted", 128 + signal.SIGINT, None
    except StopSignal as exc:
        session.stop_signal = exc.signum
        return "interrupted", 128 + exc.signum, None
    except BaseException as exc:  # the script's own error: shown as Python would show it
        text = _script_traceback(exc, script)
        sys.stderr.write(text)
        return "script_error", 1, text
    return "script_finished", 0, None


def main(argv: list[str]) -> int:
    if not argv:
        print("usage: python -m torchdoctor.observe.bootstrap SCRIPT [ARGS...]", file=sys.stderr)
        return 2
    parent = die_with_torchdoctor(signal.SIGTERM)
    for sig in _STOP_SIGNALS[1:]:
        signal.signal(sig, _raise_stop)
    config = ObserveConfig.from_env(os.environ[CONFIG_ENV])
    script = Path(argv[0]).resolve()
    sys.path[0] = str(script.parent)
    session = ObservationSession(config, script, stop=StopObservation)
    how, code, text = "killed", 1, None
    try:
        try:
            session.start()
        except Exception as exc:  # torchdoctor's own set-up (e.g. a knob) failed: say why, run nothing
            text = "".join(traceback.format_exception(exc))
            sys.stderr.write(f"torchdoctor could not set up the observation:\n{text}")
            how, code = "setup_error", 1
        else:
            how, code, text = _run_script(argv[0], argv, script, session)
    finally:
        for sig in _STOP_SIGNALS:  # a second stop must not lose the results
            signal.signal(sig, signal.SIG_IGN)
        session.finish(how, code, text)
        if torchdoctor_gone(parent):  # nobody is left to end what the script started: we do
            end_marked()
    if how == "completed" and _process_group_alive():
        # We stopped a distributed script mid-run: its process group was never destroyed, and
        # gloo aborts the process (SIGABRT) in interpreter teardown on torch 2.13. The results are
        # written and the streams flushed, so leave without that teardown.
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    return code


def _process_group_alive() -> bool:
    import torch.distributed as dist

    return dist.is_available() and dist.is_initialized()


def run() -> Any:
    code = main(sys.argv[1:])
    sys.stdout.flush()
    sys.stderr.flush()
    sys.exit(code)


if __name__ == "__main__":
    run()
