"""Run torchdoctor in a child process and read the child's own peak RSS.

`getrusage` and `wait4` report a child's peak as at least its parent's size at fork time (Linux
keeps the high-water mark across fork and exec), so under pytest, which has torch loaded, every
child would look 200 MB big. The child reads its own high-water mark instead (`VmHWM` in
/proc/self/status: the peak of the process image it runs) and writes it to a file on exit.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

_RUNNER = """
import atexit, os, runpy, sys
def _peak():
    with open("/proc/self/status") as status, open(os.environ["TD_PEAK_FILE"], "w") as out:
        out.write(next(line.split()[1] for line in status if line.startswith("VmHWM")))
atexit.register(_peak)
target = sys.argv.pop(1)
if target == "-m":
    sys.argv[0] = "torchdoctor"
    runpy.run_module("torchdoctor", run_name="__main__", alter_sys=True)
else:
    exec(compile(target, "<hostile>", "exec"))
"""


@dataclass(frozen=True)
class Run:
    exit: int
    peak_mb: float
    output: str


def run(args: list[str], *, timeout_s: float = 300, src: Path | None = None, cap_bytes: int | None = None) -> Run:
    """`args`: ["-m", torchdoctor arguments...] for the CLI, or [python code, arguments...].
    `src` puts another torchdoctor source tree first on the path; `cap_bytes` caps the child's
    address space, so a runaway input ends in MemoryError rather than in the kernel's OOM killer.
    A child killed by the timeout has exit code -9."""
    with tempfile.TemporaryDirectory() as folder:
        peak_file = Path(folder) / "peak"
        env = {**os.environ, "TD_PEAK_FILE": str(peak_file), "COLUMNS": "100"}
        if src is not None:
            env["PYTHONPATH"] = str(src)
        limit = None if cap_bytes is None else (lambda: resource.setrlimit(resource.RLIMIT_AS, (cap_bytes, cap_bytes)))
        try:
            proc = subprocess.run([sys.executable, "-c", _RUNNER, *args], capture_output=True, text=True, env=env,
                                  timeout=timeout_s, preexec_fn=limit)  # fmt: skip
            code, output = proc.returncode, proc.stdout + proc.stderr
        except subprocess.TimeoutExpired as exc:
            code, output = -9, f"killed after {exc.timeout:.0f} s"
        peak_kb = float(peak_file.read_text()) if peak_file.exists() else float("nan")
    return Run(code, peak_kb / 1024, output)
