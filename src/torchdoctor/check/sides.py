"""The two sides of a comparison (`Side`): what runs, where, with which interpreter; and the
script given on the command line, found and described."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from torchdoctor.check import worktree
from torchdoctor.errors import CheckError
from torchdoctor.launch.forkserver import ForkServer


@dataclass(slots=True)
class Side:
    """One side of the comparison: what runs, where, with which interpreter."""

    name: str  # "A" (reference) or "B" (now)
    label: str
    script: Path
    cwd: str
    python: str = sys.executable
    python_path: list[str] = field(default_factory=list)
    server: ForkServer | None = None
    info: dict[str, Any] = field(default_factory=dict)

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "label": self.label, "script": str(self.script), "cwd": self.cwd,
                "python": self.python, **self.info}


def script_path(script: str) -> Path:
    """The script, resolved; CheckError (kind "input") when there is no such file."""
    path = Path(script)
    if not path.is_file():
        raise CheckError(f"script not found: {script}", kind="input")
    return path.resolve()


def this_tree(path: Path) -> Side:
    """Side B for the script at `path` as it is, in this folder, marked with its commit and whether
    the tree has uncommitted changes (no commit, not dirty: outside a git repository)."""
    try:
        root = worktree.find_repo(path.parent)
    except CheckError:
        commit, dirty = None, False
    else:
        commit, dirty = worktree.head_commit(root), bool(worktree.dirty_files(root))
    return Side("B", "this tree", path, os.getcwd(), info={"commit": commit, "dirty": dirty})
