"""Which files to lint: paths expanded to Python files (a script's local imports are found by
:mod:`torchdoctor.lint.program`)."""

from __future__ import annotations

from pathlib import Path

from torchdoctor.lint.result import SkippedFile
from torchdoctor.lint.selection import LintUsageError

#: Folders never descended into when a directory is given.
_SKIPPED_DIRS = frozenset({"__pycache__", "node_modules", "site-packages"})


def python_files(paths: list[Path]) -> tuple[list[Path], list[SkippedFile]]:
    """Files to lint (`*.py`, directories searched recursively) and explicit paths skipped.

    Raises :class:`LintUsageError` for a path that does not exist.
    """
    files: list[Path] = []
    skipped: list[SkippedFile] = []
    for path in paths:
        if path.is_dir():
            files.extend(_walk(path))
        elif path.is_file() and path.suffix == ".py":
            files.append(path)
        elif path.exists():
            skipped.append(SkippedFile(str(path), "not a Python file (*.py); skipped"))
        else:
            raise LintUsageError(f"no such file or directory: {path}")
    return list(dict.fromkeys(files)), skipped


def _walk(folder: Path) -> list[Path]:
    """The Python files under `folder`, less hidden and skipped folders and any file that is, or
    lies under, a link to somewhere outside `folder` (linting DIR never reads, nor `--fix` rewrites,
    a file elsewhere)."""
    found = []
    inside = folder.resolve()
    for path in sorted(folder.rglob("*.py")):
        parts = path.relative_to(folder).parts[:-1]
        hidden = any(p.startswith(".") or p in _SKIPPED_DIRS for p in parts)
        if not hidden and path.is_file() and path.resolve().is_relative_to(inside):
            found.append(path)
    return found
