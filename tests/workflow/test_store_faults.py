"""A store that cannot be written, or is damaged, costs the user nothing else: the console report,
--json and --html are still written and the message says what to do; `--no-save` never touches the
store, not even to create its folder; a damaged store is never written to.

As root, a chmod'ed folder is still writable, so "read-only" is a `.torchdoctor` that is a plain
file: neither the folder, the database nor the run folder can be created, the same OSErrors."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.observe.helpers import FAST, SCRIPTS, WIDE_ENV
from torchdoctor.errors import StoreError
from torchdoctor.record import Record
from torchdoctor.store import RunStore


@pytest.fixture(scope="module")
def trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import torch
    from torch.profiler import ProfilerActivity, profile

    model = torch.nn.Linear(8, 8)
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for _ in range(3):
            model(torch.randn(4, 8)).sum().backward()
    path = tmp_path_factory.mktemp("trace") / "run.pt.trace.json"
    prof.export_chrome_trace(str(path))
    return path


def damaged_store(path: Path) -> bytes:
    """A store of 40 runs whose pages after the first are overwritten: a valid header, bad pages."""
    with RunStore(path) as store:
        for index in range(40):
            store.save(Record(run_id=f"run-{index}", warnings=["x" * 3000]))
    data = bytearray(path.read_bytes())
    for offset in range(4096, len(data), 4096):
        data[offset:offset + 64] = bytes(range(64))
    path.write_bytes(bytes(data))
    return bytes(data)


def _torchdoctor(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "torchdoctor", *args], capture_output=True, text=True,
                          cwd=cwd, env=WIDE_ENV, timeout=180)


def test_an_unwritable_store_still_gets_the_report_json_and_html_written(tmp_path, trace):
    (tmp_path / ".torchdoctor").write_text("not a folder")  # the store's folder cannot be created
    proc = _torchdoctor(tmp_path, "diagnose", "--trace", str(trace), "--json", "r.json", "--html", "r.html")
    assert proc.returncode == 2
    assert "cannot open the run store" in proc.stderr and "still written" in proc.stderr
    assert "Traceback" not in proc.stderr
    record = Record.load(tmp_path / "r.json")
    assert record.trace is not None and any("not stored" in w for w in record.warnings)
    assert (tmp_path / "r.html").stat().st_size > 1000
    assert proc.stdout.strip()  # the console report


def test_a_damaged_store_is_never_written_and_runs_list_says_what_to_do(tmp_path, trace):
    store = tmp_path / ".torchdoctor" / "runs.db"
    store.parent.mkdir()
    before = hashlib.sha256(damaged_store(store)).hexdigest()
    listed = _torchdoctor(tmp_path, "runs", "list")
    assert listed.returncode == 2 and "is damaged" in listed.stderr and "move it aside" in listed.stderr
    assert "Traceback" not in listed.stderr
    diagnosed = _torchdoctor(tmp_path, "diagnose", "--trace", str(trace), "--json", "r.json")
    assert diagnosed.returncode == 2 and "is damaged" in diagnosed.stderr
    assert (tmp_path / "r.json").exists()
    assert hashlib.sha256(store.read_bytes()).hexdigest() == before


@pytest.mark.slow
@pytest.mark.parametrize("store", ["absent", "blocked"])
def test_no_save_never_touches_the_store(tmp_path, store):
    if store == "blocked":
        (tmp_path / ".torchdoctor").write_text("not a folder")
    proc = _torchdoctor(tmp_path, "diagnose", *FAST, "--no-save", "--json", "r.json", "--",
                        str(SCRIPTS / "train_tensors.py"))
    assert proc.returncode == 0, proc.stderr
    assert Record.load(tmp_path / "r.json").summary.num_steps == 6
    if store == "absent":
        assert not (tmp_path / ".torchdoctor").exists()
    else:
        assert (tmp_path / ".torchdoctor").read_text() == "not a folder"


def test_opening_a_damaged_store_is_a_store_error_naming_it(tmp_path):
    damaged_store(tmp_path / "runs.db")
    with pytest.raises(StoreError, match=r"runs\.db is damaged .*malformed"):
        RunStore(tmp_path / "runs.db")


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes through file permissions")
def test_a_read_only_store_file_is_a_store_error_on_save(tmp_path):
    with RunStore(tmp_path / "runs.db") as store:
        store.save(Record(run_id="r1"))
    (tmp_path / "runs.db").chmod(0o444)
    with RunStore(tmp_path / "runs.db") as store, pytest.raises(StoreError, match="cannot write the run store"):
        store.save(Record(run_id="r2"))
