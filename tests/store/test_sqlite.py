"""The run store: a real SQLite file that keeps every Record and finds runs by id prefix."""

from __future__ import annotations

import sqlite3

import pytest

from torchdoctor.errors import StoreError
from torchdoctor.record import Record, Summary
from torchdoctor.store import RunStore


def test_saved_records_come_back_whole_and_newest_first(tmp_path):
    with RunStore(tmp_path / "runs.db") as store:
        first = Record(script="a.py", run_id="20260101-000000-aaaaaa", created_at="2026-01-01T00:00:00+00:00")
        second = Record(script="b.py", run_id="20260102-000000-bbbbbb", created_at="2026-01-02T00:00:00+00:00",
                        summary=Summary(num_steps=3, step_s=0.5))
        store.save(first)
        store.save(second)
        assert [row.run_id for row in store.list()] == [second.run_id, first.run_id]
        assert store.load("20260102") == second
        assert store.load("last") == second


def test_unknown_and_ambiguous_ids_are_clear_errors(tmp_path):
    with RunStore(tmp_path / "runs.db") as store:
        with pytest.raises(StoreError, match="holds no runs"):
            store.resolve("last")
        store.save(Record(run_id="2026-x1"))
        store.save(Record(run_id="2026-x2"))
        with pytest.raises(StoreError, match="ambiguous"):
            store.load("2026-x")
        with pytest.raises(StoreError, match="runs list"):
            store.load("nope")


def test_the_store_survives_reopening_and_keeps_trials(tmp_path):
    with RunStore(tmp_path / "runs.db") as store:
        store.save(Record(run_id="r1"))
        store.save_trial("t1", 0, run_id="r1", knobs={"num_workers": 2}, verdict="faster",
                         reason=None, figures={"step_s": 0.1})
    with RunStore(tmp_path / "runs.db") as store:
        assert store.load("r1").run_id == "r1"
        assert list(store.trials("t1"))[0]["knobs"] == {"num_workers": 2}


def test_an_unwritable_store_path_is_a_store_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(StoreError, match="cannot open"):
        RunStore(blocker / "runs.db")


def test_check_baselines_are_kept_by_name(tmp_path):
    with RunStore(tmp_path / "runs.db") as store:
        assert store.load_baseline("main") is None and store.baselines() == []
        store.save_baseline("main", {"kind": "torchdoctor.check.baseline", "created_at": "t1", "observations": [1]})
        store.save_baseline("main", {"kind": "torchdoctor.check.baseline", "created_at": "t2", "observations": [2]})
        store.save_baseline("nightly", {"created_at": "t3"})
    with RunStore(tmp_path / "runs.db") as store:
        assert store.load_baseline("main")["observations"] == [2]
        assert store.baselines() == ["main", "nightly"]


def test_a_baseline_nested_past_the_bounds_is_a_store_error_not_a_parse(tmp_path):
    """The document is scanned before it is parsed (jsonguard), as a Record is."""
    path = tmp_path / "runs.db"
    with RunStore(path) as store:
        store.save_baseline("deep", {"created_at": "t"})
    db = sqlite3.connect(path)
    with db:
        db.execute("UPDATE baselines SET document = ? WHERE name = 'deep'", (b"[" * 10_000 + b"]" * 10_000,))
    db.close()
    with RunStore(path) as store, pytest.raises(StoreError, match="baseline 'deep' .* is unreadable"):
        store.load_baseline("deep")


@pytest.mark.parametrize(("column", "value", "says"), [
    ("argv", "not json", "argv"), ("argv", '{"a": 1}', "argv"), ("step_s", "fast", "step_s"),
    ("exit_status", "x", "exit_status"), ("script", b"\xff", "script"),
])  # fmt: skip
def test_a_row_damaged_outside_torchdoctor_is_listed_as_damaged_beside_the_others(tmp_path, column, value, says):
    with RunStore(tmp_path / "runs.db") as store:
        for run_id in ("a", "b"):
            store.save(Record(run_id=run_id, script="train.py"))
    with sqlite3.connect(tmp_path / "runs.db") as db:  # as another program or a bad disk would
        db.execute(f"UPDATE runs SET {column} = ? WHERE run_id = 'a'", (value,))
    with RunStore(tmp_path / "runs.db") as store:
        rows = store.list()
    damaged = [row for row in rows if row.damaged]
    assert len(damaged) == 1 and says in damaged[0].damaged
    assert [row.run_id for row in rows if not row.damaged] == ["b"]


def test_runs_list_shows_a_damaged_row_and_the_others(tmp_path, monkeypatch, capsys):
    import sys

    from torchdoctor.cli import main

    with RunStore(tmp_path / "runs.db") as store:
        for run_id in ("run-a", "run-b"):
            store.save(Record(run_id=run_id, script="train.py"))
    with sqlite3.connect(tmp_path / "runs.db") as db:
        db.execute("UPDATE runs SET argv = 'not json', step_s = 'fast' WHERE run_id = 'run-a'")
    monkeypatch.setattr(sys, "argv", ["torchdoctor", "runs", "list", "--store", str(tmp_path / "runs.db")])
    monkeypatch.setenv("COLUMNS", "120")
    with pytest.raises(SystemExit) as end:
        main()
    out = capsys.readouterr().out
    assert (end.value.code or 0, "run-a" in out, "run-b" in out) == (0, True, True), out
    assert "damaged row: argv, step_s" in " ".join(out.split())
