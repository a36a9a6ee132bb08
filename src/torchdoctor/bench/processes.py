"""Compare whole processes (e.g. one script under two configurations), interleaved A B A B ...

One sample is the wall time (s, `time.perf_counter_ns`) of one run, from spawn to exit,
interpreter start-up and imports included: what the user waits for. Each variant first runs
`warmup_runs` unmeasured times (file cache, compiled caches), which also catches a failing
command before any time is spent measuring. Every run gets `timeout_s`; on overrun its whole
process group is killed.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from torchdoctor.bench.adaptive import BenchResult, Policy, RoundInfo, run_interleaved
from torchdoctor.bench.errors import BenchInputError, VariantFailedError, VariantTimeoutError

#: How much of a failing run's stderr is quoted in the error.
_STDERR_TAIL_CHARS = 2000


@dataclass(frozen=True)
class Command:
    """One process to run: argv (no shell), optional extra environment variables and cwd."""

    name: str
    argv: tuple[str, ...]
    env: Mapping[str, str] | None = None
    cwd: str | None = None

    @classmethod
    def script(cls, path: str, *args: str, name: str | None = None) -> Command:
        """A Python script run with this interpreter."""
        return cls(name or path, (sys.executable, path, *args))


def compare_processes(
    commands: Sequence[Command],
    *,
    policy: Policy = Policy(),
    label: str = "",
    timeout_s: float = 600.0,
    warmup_runs: int = 1,
    on_round: Callable[[RoundInfo], None] | None = None,
) -> BenchResult:
    """Run `commands` (the first is the baseline) in interleaved rounds and judge each.

    Raises VariantFailedError when a run exits non-zero or cannot start (with its stderr's
    tail), VariantTimeoutError when a run overruns `timeout_s`.
    """
    if timeout_s <= 0 or warmup_runs < 0:
        raise BenchInputError(f"need timeout_s > 0 and warmup_runs >= 0, got {timeout_s}, {warmup_runs}")
    by_name = {c.name: c for c in commands}
    for command in commands:
        for _ in range(warmup_runs):
            run_once_s(command, timeout_s)
    return run_interleaved(
        lambda name: run_once_s(by_name[name], timeout_s),
        [c.name for c in commands],
        policy=policy,
        label=label,
        on_round=on_round,
    )


def run_once_s(command: Command, timeout_s: float) -> float:
    """Wall time (s) of one run of `command`; stdout is discarded, stderr kept for errors."""
    env = {**os.environ, **command.env} if command.env else None
    start = time.perf_counter_ns()
    try:
        proc = subprocess.Popen(
            command.argv, cwd=command.cwd, env=env, stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True,
        )
    except OSError as exc:
        raise VariantFailedError(f"variant {command.name!r} cannot start: {exc}") from None
    try:
        _, stderr = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        raise VariantTimeoutError(
            f"variant {command.name!r} ran longer than the per-run timeout of {timeout_s:g} s "
            "and was killed; raise --timeout-s if that is expected"
        ) from None
    wall_s = (time.perf_counter_ns() - start) / 1e9
    if proc.returncode != 0:
        tail = stderr.decode(errors="replace")[-_STDERR_TAIL_CHARS:].strip()
        raise VariantFailedError(
            f"variant {command.name!r} exited with status {proc.returncode}"
            + (f"; its stderr ends with:\n{tail}" if tail else "")
        )
    return wall_s


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass  # already gone
    proc.communicate()
