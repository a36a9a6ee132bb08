"""Writing a user's project into tmp_path, file by file, for the lint tests."""

from __future__ import annotations

from pathlib import Path


def write(folder: Path, name: str, text: str = "") -> Path:
    """`folder/name` with `text`, its parent folders made (a package's `__init__.py` needs no text)."""
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path
