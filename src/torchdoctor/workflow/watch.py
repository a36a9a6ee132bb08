"""`torchdoctor watch`: observe a script to its end (the detailed windows at the start, then the
lean observation, observe.watch), break the whole run's wall time down (torchdoctor.goodput),
diagnose the windows, store, and print both."""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path
from typing import Sequence

import orjson
from rich.console import Console

from torchdoctor.analyse import analyse_record
from torchdoctor.goodput import breakdown, read_watch, watch_path
from torchdoctor.goodput.trends import memory_bytes
from torchdoctor.launch import LaunchConfig, ObserveConfig, observe
from torchdoctor.record import Record, new_run_id
from torchdoctor.report.safe_text import clean
from torchdoctor.report.watch import progress_line, render_whole_run
from torchdoctor.workflow.diagnose import DiagnoseOutputs, diagnose_and_report
from torchdoctor.workflow.observation import run_folder


class _Follower(threading.Thread):
    """Prints one progress line every `every_s`, from what the stream holds so far."""

    def __init__(self, path: Path, every_s: float, console: Console) -> None:
        super().__init__(name="torchdoctor-watch-progress", daemon=True)
        self.path, self.every_s, self.console = path, every_s, console
        self.stop = threading.Event()
        self._offset = 0
        self._last: tuple[int, float, float | None] | None = None  # steps, t, memory
        self._start = time.monotonic()

    def run(self) -> None:
        while not self.stop.wait(self.every_s):
            previous = self._last
            self._read()
            if self._last is None:
                continue
            steps, t, memory = self._last
            rate = (steps - previous[0]) / (t - previous[1]) if previous and t > previous[1] else None
            self.console.print(clean(progress_line(time.monotonic() - self._start, steps, rate, memory)),
                               markup=False, highlight=False)

    def _read(self) -> None:
        try:
            with self.path.open("rb") as f:
                f.seek(self._offset)
                chunk = f.read()
        except OSError:
            return
        complete = chunk[: chunk.rfind(b"\n") + 1]
        self._offset += len(complete)
        for line in complete.splitlines():
            if line.startswith(b'{"mem"'):
                reading = orjson.loads(line)["mem"]
                self._last = (reading[0], reading[1] / 1e6, memory_bytes(tuple(reading)))


def watch_script(script: str, args: Sequence[str], config: ObserveConfig, launch: LaunchConfig,
                 outputs: DiagnoseOutputs = DiagnoseOutputs(), *, progress_every_s: float = 60.0) -> Record:
    """Observe SCRIPT's whole run, keep the Record (with its `whole_run` section) and print the
    diagnosis of the windows and the whole run's breakdown; returns the Record."""
    console = outputs.console or Console()
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
    ended = time.time()
    if fallback:
        record.warnings.append(fallback)
    run = read_watch(stream)
    whole = breakdown(run, spawn, ended, disk_bytes=stream.stat().st_size) if run is not None else None
    if whole is not None:
        record.whole_run = whole.to_dict()
    else:
        record.warnings.append("the whole run's stream is missing: the script ended before it started")
    record = diagnose_and_report(analyse_record(record), outputs)
    if whole is not None:
        render_whole_run(whole, console, stream=str(stream))
    sys.stdout.flush()
    return record
