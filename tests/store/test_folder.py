"""torchdoctor's own folder in a user's project is ignored by git from its first run, and a store
elsewhere leaves the user's folders as they are."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from torchdoctor.store import DEFAULT_STORE, RunStore, make_store_folder
from torchdoctor.store.folder import GITIGNORE


def test_the_default_store_folder_ignores_itself_in_git(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    with RunStore(tmp_path / DEFAULT_STORE):
        pass
    (tmp_path / ".torchdoctor" / "runs" / "r1").mkdir(parents=True)
    (tmp_path / ".torchdoctor" / "runs" / "r1" / "trace.json").write_text("{}")
    status = subprocess.run(["git", "-C", str(tmp_path), "status", "--porcelain", "--untracked-files=all"],
                            capture_output=True, text=True, check=True).stdout
    assert status == ""
    assert (tmp_path / ".torchdoctor" / ".gitignore").read_text() == GITIGNORE


def test_a_gitignore_the_user_wrote_is_kept(tmp_path: Path) -> None:
    own = tmp_path / ".torchdoctor"
    own.mkdir()
    (own / ".gitignore").write_text("runs/\n")
    make_store_folder(own)
    assert (own / ".gitignore").read_text() == "runs/\n"


def test_a_store_in_another_folder_writes_nothing_beside_it(tmp_path: Path) -> None:
    with RunStore(tmp_path / "results" / "runs.db"):
        pass
    assert sorted(p.name for p in (tmp_path / "results").iterdir()) == ["runs.db"]


def test_a_folder_that_cannot_be_made_is_an_os_error(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    with pytest.raises(OSError):
        make_store_folder(tmp_path / "file" / ".torchdoctor")
