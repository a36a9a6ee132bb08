"""`torchdoctor report`: a saved Record or a stored run, drawn to the terminal or to files."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.findings import finding
from torchdoctor.record import Record, Summary
from torchdoctor.store import RunStore


def _torchdoctor(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "torchdoctor", *args], capture_output=True, text=True, cwd=cwd,
                          timeout=60, env={"COLUMNS": "200", "PATH": "/usr/bin:/bin"})  # fmt: skip


def test_report_writes_html_and_text_from_a_record_file(tmp_path: Path) -> None:
    record = Record(script="train.py", summary=Summary(num_steps=3, step_s=0.01, forward_fraction=1.0),
                    findings=[finding("TD-DATA-001", title="slow loader", upside=0.3)])  # fmt: skip
    source = record.save(tmp_path / "r.json")
    proc = _torchdoctor("report", str(source), "--html", "out.html", "-o", "out.txt", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "TD-DATA-001" in (tmp_path / "out.html").read_text()
    assert "slow loader" in (tmp_path / "out.txt").read_text()


def test_report_draws_a_stored_run_in_the_terminal(tmp_path: Path) -> None:
    with RunStore(tmp_path / "runs.db") as store:
        store.save(Record(script="train.py", findings=[finding("TD-CFG-001", title="debug env var", upside=0.2)]))
    proc = _torchdoctor("report", "last", "--store", "runs.db", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "TD-CFG-001" in proc.stdout and "debug env var" in proc.stdout


def test_an_unknown_run_or_format_is_a_one_line_error(tmp_path: Path) -> None:
    with RunStore(tmp_path / "runs.db"):
        pass
    proc = _torchdoctor("report", "nope", "--store", "runs.db", cwd=tmp_path)
    assert proc.returncode == 2 and "no run 'nope'" in proc.stderr and "Traceback" not in proc.stderr
    Record().save(tmp_path / "r.json")
    proc = _torchdoctor("report", "r.json", "-o", "r.pdf", cwd=tmp_path)
    assert proc.returncode == 2 and "no report renderer" in proc.stderr


def test_a_name_that_is_no_file_makes_no_store_where_there_was_none(tmp_path: Path) -> None:
    proc = _torchdoctor("report", "NOT_A_FILE", cwd=tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "NOT_A_FILE is not a file, and there is no run store at .torchdoctor/runs.db" in " ".join(proc.stderr.split())
    assert list(tmp_path.iterdir()) == []
