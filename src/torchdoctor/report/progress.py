"""A rich progress display fed by the observed script's `phase done total` reports.

The phase name comes from the child process: it is printed through report/safe_text.py."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Callable, Iterator

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

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
