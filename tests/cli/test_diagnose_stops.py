"""`diagnose --trace` measures nothing, so it holds no stop: Ctrl-C and SIGTERM end it at once, in
the middle of reading a large trace (a script's diagnosis holds them while it saves instead:
tests/launch/test_process_ownership.py)."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import orjson
import psutil
import pytest

pytestmark = pytest.mark.slow


def _long_trace(path: Path, steps: int = 150_000) -> None:
    """A plain trace of `steps` profiler steps, one operator each: half a minute of analysis."""
    events = []
    for step in range(steps):
        events.append({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{step}", "pid": 1, "tid": 1,
                       "ts": step * 100, "dur": 90})
        events.append({"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": step * 100 + 1,
                       "dur": 50})
    path.write_bytes(orjson.dumps({"traceEvents": events}))


def _wait_until_reading(proc: subprocess.Popen[str], traces: Path) -> None:
    """Until the process (or the child reading a trace's second half) has a trace in `traces` open."""
    process = psutil.Process(proc.pid)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            family = [process, *process.children(recursive=True)]
            if any(Path(f.path).parent == traces for p in family for f in p.open_files()):
                return
        except psutil.Error:
            pass
        time.sleep(0.02)
    raise AssertionError(f"diagnose never opened the trace: {proc.communicate()}")


@pytest.mark.parametrize("sig, status", [(signal.SIGTERM, -signal.SIGTERM), (signal.SIGINT, 130)])
def test_a_trace_only_diagnosis_ends_at_once_on_a_stop(tmp_path, sig, status):
    # Twelve ranks read one after the other (`--jobs 1`): the stop arrives while the first is read,
    # however fast this machine reads one (150k steps: 1-2 s on a quiet core, half a minute loaded).
    traces = tmp_path / "ranks"
    traces.mkdir()
    _long_trace(traces / "rank-0.json")
    for rank in range(1, 12):
        (traces / f"rank-{rank}.json").hardlink_to(traces / "rank-0.json")
    command = [sys.executable, "-m", "torchdoctor", "diagnose", "--no-save", "--jobs", "1", "--trace", str(traces)]
    # SIGINT as a shell leaves it: a pytest-xdist worker ignores it, and its children inherit that.
    proc = subprocess.Popen(command, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        _wait_until_reading(proc, traces)
        assert proc.poll() is None, "the analysis ended before the stop was sent"
        proc.send_signal(sig)
        _, stderr = proc.communicate(timeout=120)  # held, it would run the whole analysis and exit 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == status, stderr  # held, it exited 128 + N after the analysis
    assert "Traceback" not in stderr
    if sig == signal.SIGINT:
        assert "interrupted; nothing was measured" in stderr
