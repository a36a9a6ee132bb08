"""Rich progress displays: the observed script's `phase done total` reports, and ranks analysed.

The phase name comes from the child process: it is printed through report/safe_text.py."""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator

from rich.console import Console
from rich.progress import (
    BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn, TimeRemainingColumn,
)

from torchdoctor.report.safe_text import markup

_LABELS = {
    "starting": "starting the script",
    "warm-up": "warm-up steps",
    "timing": "timing window",
    "profiling": "profiler window",
    "sampling outputs": "output sample (numerics)",
}


@contextmanager
def observation_progress(console: Console | None = None) -> Iterator[Callable[[str, int, int], None]]:
    """Yield the callback for `observe(progress=...)`; shows nothing when stderr is not a terminal."""
    console = console or Console(stderr=True)
    with Progress(
        SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
        TimeElapsedColumn(), console=console, transient=True, disable=not console.is_terminal,
    ) as progress:
        task = progress.add_task("starting the script", total=None)

        def update(phase: str, done: int, total: int) -> None:
            progress.update(task, description=_LABELS.get(phase) or markup(phase, one_line=True, limit=80),
                            completed=done, total=total or None)

        yield update


@contextmanager
def ranks_progress(console: Console | None = None) -> Iterator[Callable[[int, int, str], None]]:
    """Yield the callback for `analyse_traces(progress=...)`: ranks done of all, elapsed time and
    the time left; shows nothing when stderr is not a terminal. The path comes from the command
    line or a directory listing: it is printed through report/safe_text.py."""
    console = console or Console(stderr=True)
    with Progress(
        SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
        TimeElapsedColumn(), TextColumn("left"), TimeRemainingColumn(), console=console, transient=True,
        disable=not console.is_terminal,
    ) as progress:
        task = progress.add_task("ranks analysed", total=None)

        def update(done: int, total: int, path: str) -> None:
            progress.update(task, completed=done, total=total,
                            description=f"ranks analysed (last: {markup(Path(path).name, one_line=True, limit=40)})")

        yield update
