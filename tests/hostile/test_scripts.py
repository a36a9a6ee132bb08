"""Hostile scripts, observed by the real CLI in a subprocess: a script that forks, that does not
compile, that swaps its optimizer's step mid-run. Each gets the answer docs/reliability.md
documents and leaves no process behind."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.observe.helpers import WIDE_ENV
from torchdoctor.record import Record

pytestmark = pytest.mark.slow

SHORT = ["--warmup-steps", "2", "--steps", "5", "--no-profile", "--no-memory"]
TRAIN = """
import torch
model = torch.nn.Linear(8, 8)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
for step in range(40):
    optimizer.zero_grad()
    model(torch.randn(4, 8)).sum().backward()
    optimizer.step()
"""


def diagnose(tmp_path: Path, source: str | bytes, options: list[str] = SHORT,
             name: str = "script.py") -> tuple[subprocess.CompletedProcess[str], Record | None]:
    """`torchdoctor diagnose OPTIONS -- SCRIPT` on `source`, written to tmp_path/name."""
    script = tmp_path / name
    if isinstance(source, bytes):
        script.write_bytes(source)
    else:
        script.write_text(textwrap.dedent(source))
    out = tmp_path / "record.json"
    command = [sys.executable, "-m", "torchdoctor", "diagnose", *options, "--json", str(out),
               "--store", str(tmp_path / "runs.db"), "--", str(script)]
    proc = subprocess.run(command, capture_output=True, text=True, timeout=120, cwd=tmp_path, env=WIDE_ENV)
    return proc, Record.load(out) if out.exists() else None


def test_a_child_the_script_forks_neither_overwrites_the_results_nor_ends_the_run(tmp_path):
    forks = "import os, time\nif os.fork() == 0:\n    os.setsid()\n    time.sleep(60)\n    os._exit(0)\n"
    proc, record = diagnose(tmp_path, forks + TRAIN)
    assert proc.returncode == 0, proc.stderr
    assert record is not None and record.exit.reason == "completed"
    assert record.summary.num_steps == 5 and record.step_detection == "optimizer"
    assert "left 1 process(es) running; torchdoctor ended them" in proc.stdout



@pytest.mark.parametrize("source, error", [
    ("def f(:\n    pass\n", "script.py:1: SyntaxError: invalid syntax"),
    ("#!/bin/sh\necho hello\nfor i in 1 2; do echo $i; done\n", "script.py:2: SyntaxError: invalid syntax"),
    (b"\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00", "script.py: SyntaxError: source code string cannot contain null bytes"),
])  # fmt: skip
def test_a_script_that_does_not_compile_is_reported_with_its_own_error(tmp_path, source, error):
    proc, record = diagnose(tmp_path, source)
    assert proc.returncode == 1
    assert record.exit.reason == "script_error"
    assert record.exit.message == f"the script does not compile: {tmp_path}/{error}"
    assert "Traceback" not in proc.stderr and "torchdoctor" not in record.exit.traceback
    assert proc.stderr.splitlines()[-1] == error.split(": ", 1)[1]  # Python's own last line
