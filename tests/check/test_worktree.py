"""REF's files for `check --against REF`: a temporary worktree holds its submodules too, or the
check stops and says why it could not check them out. Real git repositories in tmp_path."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from torchdoctor.check.worktree import temporary_worktree
from torchdoctor.errors import CheckError

#: git refuses local paths as submodule URLs unless told (protocol.file.allow, since 2.38.1)
FILE_ALLOWED = {"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "protocol.file.allow", "GIT_CONFIG_VALUE_0": "always"}
IDENTITY = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
            "GIT_COMMITTER_EMAIL": "t@t"}


def _git(folder: Path, *args: str) -> str:
    env = {**os.environ, **IDENTITY, **FILE_ALLOWED}
    return subprocess.run(["git", "-C", str(folder), *args], check=True, capture_output=True, text=True,
                          env=env).stdout.strip()


def _repo_with_submodule(tmp_path: Path) -> tuple[Path, str]:
    library, project = tmp_path / "library", tmp_path / "project"
    for folder in (library, project):
        folder.mkdir()
        _git(folder, "init", "--quiet")
    (library / "helpers.py").write_text("VALUE = 1\n")
    _git(library, "add", "-A")
    _git(library, "commit", "--quiet", "-m", "library")
    (project / "train.py").write_text("from lib.helpers import VALUE\n")
    _git(project, "submodule", "--quiet", "add", str(library), "lib")
    _git(project, "add", "-A")
    _git(project, "commit", "--quiet", "-m", "project")
    return project, _git(project, "rev-parse", "HEAD")


def test_the_worktree_of_a_ref_holds_its_submodules(tmp_path, monkeypatch):
    project, commit = _repo_with_submodule(tmp_path)
    for key, value in FILE_ALLOWED.items():
        monkeypatch.setenv(key, value)
    with temporary_worktree(project, commit) as tree:
        assert (tree / "lib" / "helpers.py").read_text() == "VALUE = 1\n"
    assert not tree.exists()


def test_submodules_that_cannot_be_checked_out_stop_the_check_with_gits_reason(tmp_path, monkeypatch):
    project, commit = _repo_with_submodule(tmp_path)
    for key in FILE_ALLOWED:
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(tmp_path / "no-gitconfig"))  # the user's own settings aside
    with pytest.raises(CheckError, match=rf"the checkout of {commit[:12]} has git submodules, and checking them "
                                         r"out failed: .*transport 'file' not allowed"):
        with temporary_worktree(project, commit):
            pass
    assert _git(project, "worktree", "list").count("\n") == 0  # the temporary worktree was removed
