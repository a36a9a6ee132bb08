"""The demo: a temporary git repository whose second commit slows the demo workload down."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from torchdoctor.check import worktree
from torchdoctor.check.demo import demo_repository, one_intra_op_thread, slowed_down
from torchdoctor.errors import CheckError


def test_the_demo_repository_holds_the_demo_and_a_slower_commit() -> None:
    with demo_repository() as repo:
        log = worktree.git(repo, "log", "--format=%s").stdout
        diff = worktree.git(repo, "diff", "HEAD~1", "HEAD").stdout
        assert log.splitlines() == ["tokeniser: blake2b n-gram hashes (fewer collisions)",
                                    "demo: a data-bound text classifier"]
        assert "+import hashlib" in diff and "hashlib.blake2b(" in diff
        assert subprocess.run([sys.executable, "-c", f"import ast; ast.parse(open({str(repo / 'demo.py')!r}).read())"],
                              check=False).returncode == 0
    assert not repo.exists()


def test_a_demo_script_that_changed_is_refused_rather_than_left_as_fast() -> None:
    with pytest.raises(CheckError, match="the demo script changed"):
        slowed_down("print('another script')\n")


def test_the_demo_runs_with_one_intra_op_thread_and_restores_the_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OMP_NUM_THREADS", "4")
    with one_intra_op_thread():
        assert os.environ["OMP_NUM_THREADS"] == "1"
    assert os.environ["OMP_NUM_THREADS"] == "4"
    monkeypatch.delenv("OMP_NUM_THREADS")
    with one_intra_op_thread():
        assert os.environ["OMP_NUM_THREADS"] == "1"
    assert "OMP_NUM_THREADS" not in os.environ
