"""What the field and integration tests share: the field scripts, the script's own printed timing,
and the step-anatomy check (the parts of a step are disjoint, so the shares add up to 1)."""

from __future__ import annotations

import importlib.util
import os
import re
import statistics
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from torchdoctor.record import Record

SCRIPTS = Path(__file__).resolve().parent / "scripts"
PARTS = ("data_wait", "forward", "backward", "optimizer")
#: The line every field script prints per step, from the end of one step to the end of the next.
#: One intra-op thread: on CI's two shared cores, torch's spinning intra-op threads make tiny ops
#: take 10x longer whenever another process holds a core, drowning the known sleeps and timings.
ENV = {**os.environ, "COLUMNS": "200", "OMP_NUM_THREADS": "1"}
OWN_TIMING = re.compile(r"^\[timing\] step (\d+): ([\d.]+) ms$", re.MULTILINE)


def load_script(name: str) -> ModuleType:
    """A field script imported as a module (not as __main__), so a test can call its `main`."""
    path = SCRIPTS / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"field_{name}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def diagnose(tmp_path: Path, script: Path, args: list[str], options: list[str]
             ) -> tuple[subprocess.CompletedProcess[str], Record]:
    """`torchdoctor diagnose OPTIONS -- SCRIPT ARGS` in a subprocess; its output and its Record."""
    out = tmp_path / "record.json"
    command = [sys.executable, "-m", "torchdoctor", "diagnose", *options, "--json", str(out),
               "--store", str(tmp_path / "runs.db"), "--", str(script), *args]
    proc = subprocess.run(command, capture_output=True, text=True, timeout=120, cwd=tmp_path, env=ENV)
    assert out.exists(), proc.stdout + proc.stderr
    return proc, Record.load(out)


def own_step_times_s(stdout: str, first: int, count: int) -> list[float]:
    """The script's own times, in seconds, of steps `first` to `first + count - 1`. Every field
    script numbers its steps from 0, so its step N is the one torchdoctor's step clock ends as its
    (N+1)-th: the timing window after W warm-up steps is the script's steps W to W + count - 1."""
    times = {int(step): float(ms) / 1e3 for step, ms in OWN_TIMING.findall(stdout)}
    return [times[step] for step in range(first, first + count)]


def assert_shares_add_up(record: Record) -> None:
    summary = record.summary
    fractions = [getattr(summary, f"{part}_fraction") for part in PARTS]
    assert sum(fractions) <= 1 + 1e-9, fractions
    assert sum(fractions) + summary.other_fraction == pytest.approx(1.0, abs=1e-6)
    for step in record.steps:  # the parts of one step are disjoint intervals within it
        assert sum(getattr(step, f"{part}_s") for part in PARTS) <= step.wall_s + 1e-6


def assert_sleep_in(record: Record, part: str, sleep_s: float) -> None:
    """The part holding a known sleep measures at least the sleep in the median step; the others
    stay below it (they take milliseconds on the tiny models)."""
    medians = {p: statistics.median(getattr(s, f"{p}_s") for s in record.steps) for p in PARTS}
    assert medians[part] >= sleep_s * 0.95, medians
    for other in PARTS:
        if other != part:
            assert medians[other] < sleep_s, (other, medians)
