"""Running `torchdoctor diagnose` on a test script in a real subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from torchdoctor.record import Record

SCRIPTS = Path(__file__).resolve().parent / "scripts"
# Short windows keep the suite quick; the mechanics are the same as the defaults.
# Wide enough that rich does not wrap the report's paths and commands.
WIDE_ENV = {**os.environ, "COLUMNS": "200"}
FAST = ["--warmup-steps", "2", "--steps", "6", "--profile-wait", "0", "--profile-warmup", "1",
        "--profile-active", "1"]


def run_diagnose(tmp_path: Path, script: str, *args: str, options: list[str] = FAST, timeout: float = 180,
                 env: dict[str, str] | None = None) -> tuple[subprocess.CompletedProcess[str], Record | None]:
    out = tmp_path / "record.json"
    command = [sys.executable, "-m", "torchdoctor", "diagnose", *options, "--json", str(out),
               "--store", str(tmp_path / "runs.db"), "--", str(SCRIPTS / script), *args]
    proc = subprocess.run(command, capture_output=True, text=True, timeout=timeout, cwd=tmp_path,
                          env={**WIDE_ENV, **(env or {})})
    return proc, Record.load(out) if out.exists() else None
