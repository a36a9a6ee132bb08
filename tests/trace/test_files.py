"""The trace files a command is given: files, directories and glob patterns (trace/files.py)."""

from __future__ import annotations

from pathlib import Path

from torchdoctor.trace.files import trace_files


def test_directories_and_patterns_become_their_trace_files_in_name_order(tmp_path: Path) -> None:
    for name in ("rank-1.json.gz", "rank-0.json", "notes.txt", "rank-2.pt.trace.json"):
        (tmp_path / name).write_text("{}")
    (tmp_path / "sub").mkdir()
    assert trace_files([tmp_path]) == [tmp_path / n for n in ("rank-0.json", "rank-1.json.gz", "rank-2.pt.trace.json")]
    assert trace_files([str(tmp_path / "rank-[01]*")]) == [tmp_path / "rank-0.json", tmp_path / "rank-1.json.gz"]


def test_a_plain_path_is_kept_as_given_even_when_missing(tmp_path: Path) -> None:
    missing = tmp_path / "rank-9.json"
    assert trace_files([missing, str(tmp_path / "none-*.json")]) == [missing]
