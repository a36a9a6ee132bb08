"""`runs list`: a run id is what the user copies into `runs show`; it is never cropped."""

from __future__ import annotations

from rich.console import Console

from torchdoctor.record import RunRow
from torchdoctor.report.runs import runs_table


def test_run_ids_are_never_cropped_in_a_narrow_terminal():
    ids = ["20261130-213036-3a0b1c", "torchrun-my-very-long-elastic-job-id-0123456789abcdef"]
    rows = [RunRow(run_id, "2026-11-30T21:30:36+00:00", "script", "/a/long/path/train_with_a_long_name.py",
                   ["--epochs", "100", "--batch-size", "512"], 0, "completed", 0.1, 10.0, None) for run_id in ids]
    console = Console(width=80, record=True)
    console.print(runs_table(rows))
    lines = console.export_text().splitlines()
    for run_id in ids:
        assert any(run_id in line for line in lines), run_id
