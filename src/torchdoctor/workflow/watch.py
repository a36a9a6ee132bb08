"""`torchdoctor watch`: observe a script to its end (the detailed windows at the start, then the
lean observation, observe.watch), follow it live (goodput.live), break the whole run's wall time
down (torchdoctor.goodput), diagnose the windows, store, and print both."""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path
from typing import Sequence

from rich.console import Console
from rich.live import Live

from torchdoctor.analyse import analyse_record
from torchdoctor.goodput import RunStream, job_breakdown, read_watch, watch_path, watch_paths
from torchdoctor.goodput.live import LiveState, LiveView
from torchdoctor.launch import LaunchConfig, ObserveConfig, observe
from torchdoctor.record import Record, new_run_id
from torchdoctor.report.safe_text import clean
from torchdoctor.report.watch import live_panel, progress_line, render_whole_run
from torchdoctor.workflow.diagnose import DiagnoseOutputs, diagnose_and_report
from torchdoctor.workflow.observation import run_folder


class _Follower(threading.Thread):
    """Follows the stream while the script runs (goodput.live; in this process, not the script's):
    on a terminal a live panel redrawn every `refresh_s`, else one plain line every `every_s`."""

    def __init__(self, path: Path, every_s: float, console: Console, *, refresh_s: float = 1.0) -> None:
        super().__init__(name="torchdoctor-watch-progress", daemon=True)
        self.state, self.console = LiveState(path), console
        self.every_s = refresh_s if console.is_terminal else every_s
        self.stop = threading.Event()
        self._start = time.monotonic()

    def _view(self) -> LiveView:
        self.state.read()
        return self.state.view(time.monotonic() - self._start)

    def run(self) -> None:
        if not self.console.is_terminal:
            while not self.stop.wait(self.every_s):
                view = self._view()
                if view.steps:
                    self.console.print(clean(progress_line(view)), markup=False, highlight=False)
            return
        with Live(console=self.console, auto_refresh=False, transient=True) as live:
            while not self.stop.wait(self.every_s):
                live.update(live_panel(self._view()), refresh=True)


def _streams(follower: _Follower, paths: dict[int, Path]) -> dict[int, RunStream]:
    """Every rank's stream read to its end; rank 0's by the live view's reader (it has read most
    of it already), read afresh should that reader not have stopped."""
    runs = {}
    for rank, path in paths.items():
        if rank == 0 and not follower.is_alive():
            follower.state.read(final=True)
            run = follower.state.run if follower.state.follower.lines else None
        else:
            run = read_watch(path)
        if run is not None:
            runs[rank] = run
    return runs


def watch_script(script: str, args: Sequence[str], config: ObserveConfig, launch: LaunchConfig,
                 outputs: DiagnoseOutputs = DiagnoseOutputs(), *, progress_every_s: float = 60.0) -> Record:
    """Observe SCRIPT's whole run, keep the Record (with its `whole_run` section) and print the
    diagnosis of the windows and the whole run's breakdown; returns the Record."""
    run_id = new_run_id()
    out_dir, fallback = run_folder(outputs.store_path, run_id, save=outputs.save)
    stream = watch_path(out_dir, 0)
    follower = _Follower(stream, progress_every_s, Console(stderr=True, width=80))
    follower.start()
    spawn = time.time()
    try:
        record = observe(script, args, config, launch, out_dir=out_dir, run_id=run_id)
    finally:
        follower.stop.set()
        follower.join(timeout=5.0)  # the live panel is cleared before the report
    ended = time.time()
    if fallback:
        record.warnings.append(fallback)
    return report_whole_run(record, out_dir, spawn, ended, outputs, runs=_streams(follower, watch_paths(out_dir)))


def report_whole_run(record: Record, out_dir: str | Path, spawn_unix_s: float, ended_unix_s: float,
                     outputs: DiagnoseOutputs, *, runs: dict[int, RunStream] | None = None) -> Record:
    """Add the whole run's breakdown to the Record, from the ranks' streams in `out_dir` (`runs`:
    those already read, by rank; else each is read here) of a process started at `spawn_unix_s`
    and ended at `ended_unix_s`; diagnose, store and print the Record, then the breakdown."""
    paths = watch_paths(out_dir)
    if runs is None:
        runs = {rank: run for rank, path in paths.items() if (run := read_watch(path)) is not None}
    whole = job_breakdown(runs, spawn_unix_s, ended_unix_s, disk_bytes=sum(p.stat().st_size for p in paths.values()))
    if whole is not None:
        record.whole_run = whole.to_dict()
    else:
        record.warnings.append("the whole run's stream is missing: the script ended before it started")
    record = diagnose_and_report(analyse_record(record), outputs)
    if whole is not None:
        shown = watch_path(out_dir, 0) if len(paths) < 2 else Path(out_dir) / "rank*.watch.jsonl"
        render_whole_run(whole, outputs.console or Console(), stream=str(shown))
    sys.stdout.flush()
    return record
