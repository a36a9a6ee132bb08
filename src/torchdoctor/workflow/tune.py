"""`torchdoctor tune`: the search over knobs, its trials kept in the store, a progress bar, the report."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from rich.console import Console

from torchdoctor.report.tune import render_result, tune_progress
from torchdoctor.store import RunStore
from torchdoctor.tune import TuneConfig, Tuner, TuneResult


def tune_script(script: str, args: Sequence[str], config: TuneConfig, *, store_path: Path,
                json_out: Path | None = None, console: Console | None = None) -> TuneResult:
    """Tune SCRIPT (trials stored in `store_path`, their artefacts beside it), print and return the result."""
    console = console or Console()
    with RunStore(store_path) as store, tune_progress(console, config.max_trials + 2) as progress:
        result = Tuner(script, args, config, store=store, work_dir=Path(store_path).parent / "tune",
                       progress=progress).run()
    render_result(result, console)
    if json_out:
        result.save(json_out)
        console.print(f"[dim]result written to {json_out}; trials stored as {result.tune_id} in {store_path}[/]")
    return result
