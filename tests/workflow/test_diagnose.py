"""`torchdoctor diagnose` beside a busy machine (workflow/diagnose.py): the report says its figures
are disturbed, in the terminal and the JSON, and the threads probe tries the cores the others leave."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.observe.helpers import run_diagnose
from torchdoctor.probe_values import THREADS


@pytest.mark.slow
def test_beside_busy_processes_every_timing_figure_carries_the_caveat(tmp_path: Path) -> None:
    # Two spinning processes per logical core: whatever the machine's size, others take most of it.
    spinners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2 * (os.cpu_count() or 1))]
    try:
        proc, record = run_diagnose(tmp_path, "train_tensors.py", timeout=300)
    finally:
        for spinner in spinners:
            spinner.kill()
            spinner.wait()
    assert record is not None, proc.stderr
    (caveat,) = [c for c in record.caveats if c.startswith("other processes used ")]
    assert "(p10-p90): every timing figure is disturbed" in caveat
    assert proc.stdout.index("Caveats that change how the figures below read") < proc.stdout.index("median step")
    assert all(f.confidence == "low" and caveat in f.caveats for f in record.findings)
    threads = record.env["torch"]["num_threads"]
    probe = THREADS.of(record)
    if threads > 1:  # beside the others' load the probe tries fewer threads, whatever it measures
        assert probe is not None and probe["tried_threads"] < threads, record.system["summary"]
