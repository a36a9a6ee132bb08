"""`torchdoctor tune`: the search over knobs, its trials kept in the store, a progress bar, the
report; and `torchdoctor run --apply`: the script run with a result's kept knobs, checked first.

Both hold stop signals (launch.stops) from start to end: a stop interrupts the running trial or
script (forwarded to it), and is never raised in the middle of writing the result or the store.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Sequence

import orjson
from rich.console import Console

from torchdoctor.knobs import knob_env
from torchdoctor.launch.apply import KNOBS_ENV, command as knobs_command
from torchdoctor.launch.child import run_owned
from torchdoctor.launch.stops import held_stops
from torchdoctor.process.signals import signal_name
from torchdoctor.report.tune import render_result, tune_progress
from torchdoctor.report.safe_text import markup
from torchdoctor.store import RunStore
from torchdoctor.tune import TuneConfig, Tuner, TuneResult, load_result


def tune_script(script: str, args: Sequence[str], config: TuneConfig, *, store_path: Path,
                json_out: Path | None = None, console: Console | None = None) -> TuneResult:
    """Tune SCRIPT (trials stored in `store_path`, their artefacts beside it), print and return the
    result; an interrupted search reports the trials so far with `exit_status` 128 + the signal."""
    console = console or Console()
    with held_stops() as stops:
        bar = tune_progress(console, config.max_trials + 2, config.budget_s)
        with RunStore(store_path) as store, bar as progress:
            result = Tuner(script, args, config, store=store, work_dir=Path(store_path).parent / "tune",
                           progress=progress, stop_signal=lambda: stops.first).run()
        if json_out:
            result.save(json_out)
        render_result(result, console)
        if json_out:
            console.print(f"[dim]result written to {markup(json_out)}; trials stored as {markup(result.tune_id)} in {markup(store_path)}[/]")
    return result


def run_applied(script: str, args: Sequence[str], result_path: Path, *, force: bool = False,
                console: Console | None = None) -> int:
    """Run SCRIPT ARGS with the kept knobs of the tune result at `result_path` (checked by
    `tune.load_result`; warnings printed); returns the exit status (128 + N for signal N)."""
    console = console or Console(stderr=True)
    kept, warnings = load_result(result_path, script, force=force)
    for warning in warnings:
        console.print(f"[yellow]warning:[/] {markup(warning)}", highlight=False)
    env = {**os.environ, **knob_env(kept), KNOBS_ENV: orjson.dumps(kept).decode()}
    with held_stops():
        end = run_owned(knobs_command(script, list(args)), env)
    if end.returncode < 0 and not end.signals and not end.killed:  # no stop of torchdoctor's own ended it
        console.print("[red]error:[/] " + markup(_ended_by_a_signal(-end.returncode, kept)), highlight=False)
    return 128 - end.returncode if end.returncode < 0 else end.returncode


def _ended_by_a_signal(signum: int, kept: dict[str, object]) -> str:
    """Why the script may have died, in words: the kernel's out-of-memory killer sends SIGKILL."""
    knobs = ", ".join(f"{name}={value!r}" for name, value in kept.items()) or "no knob"
    cause = " (the out-of-memory killer sends it: a knob such as batch_size can need more memory)" \
        if signum == signal.SIGKILL else ""
    return f"the script was ended by {signal_name(signum)}{cause} while running with {knobs}"
