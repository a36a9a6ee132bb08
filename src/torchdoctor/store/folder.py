"""The folder a store lives in: made on first use, and when it is torchdoctor's own `.torchdoctor/`
in the user's project, marked so that git ignores it (as pytest marks `.pytest_cache/`): runs,
traces and baselines are the user's local measurements, not their source."""

from __future__ import annotations

from pathlib import Path

OWN_FOLDER = ".torchdoctor"
GITIGNORE = "# Created by torchdoctor automatically: runs, traces and baselines measured here.\n*\n"


def make_store_folder(folder: Path) -> None:
    """Create `folder` (and its parents); inside torchdoctor's own folder, write a `.gitignore` that
    ignores everything, unless one is there already (the user's own is never replaced). Raises
    OSError when the folder cannot be made; a `.gitignore` that cannot be written is skipped."""
    folder.mkdir(parents=True, exist_ok=True)
    if folder.name != OWN_FOLDER:
        return
    ignore = folder / ".gitignore"
    if ignore.exists():
        return
    try:
        ignore.write_text(GITIGNORE)
    except OSError:
        pass  # a read-only folder keeps working; only git's view of it is left to the user
