"""The trace files a command is given: files, directories of them, or glob patterns."""

from __future__ import annotations

import glob
from collections.abc import Sequence
from pathlib import Path

#: What a directory's trace files end with (torch.profiler's `tensorboard_trace_handler` writes
#: `<worker>.<time>.pt.trace.json`, optionally gzipped).
SUFFIXES = (".json", ".json.gz")


def trace_files(args: Sequence[str | Path]) -> list[Path]:
    """Each argument as files: a directory gives the trace files directly in it, a path that does
    not exist but holds a glob pattern (`*`, `?`, `[`) gives its matches, both sorted by name; any
    other path is kept as it is (a missing one is then reported by the loader)."""
    out: list[Path] = []
    for arg in args:
        path = Path(arg)
        if path.is_dir():
            out += sorted(p for p in path.iterdir() if p.is_file() and p.name.endswith(SUFFIXES))
        elif not path.exists() and glob.has_magic(str(arg)):
            out += sorted(Path(p) for p in glob.glob(str(arg)))
        else:
            out.append(path)
    return out
