"""Each measured step, streamed by the child to `<out_dir>/rank<RANK>.steps.jsonl` as it happens.

Why: a rank's results file is written when the script ends; a SIGKILL, a segfault or the OOM
killer leave no time for it, and a run killed at step 27, after its 20-step timing window was
complete, used to give a Record with 0 steps. The stream is append-only JSON lines written with
one unbuffered `os.write` each (no fsync: the kernel keeps them when the process dies), so the
parent builds the rank's result from it when the results file is missing.

Lines (one JSON object each):
  {"step": {StepSample fields, "loss": null}, "source": "optimizer", "seen": 27}
      one timed step, written at its end; `source` is the step detection it was counted by
      (a later, better source restarts the count: only the last source's steps are kept);
  {"source": "optimizer", "seen": 3}
      any other step's end (warm-up, profiler window): how far the script got;
  {"window_end": {"window_s": 0.52, "losses": [...]}}
      the timing window is complete; losses are read here, after its device synchronisation,
      never inside the window.
A torn last line (killed mid-write) is skipped.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import orjson


def stream_path(out_dir: str | Path, rank: int) -> Path:
    return Path(out_dir) / f"rank{rank}.steps.jsonl"


class StepStream:
    """The child's writer. Opened lazily at the first line; never raises (a full disk must not
    fail the script: the results file is still written at the end)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None
        self._broken = False

    def _write(self, line: dict[str, Any]) -> None:
        if self._broken:
            return
        try:
            if self._fd is None:
                self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
            os.write(self._fd, orjson.dumps(line, option=orjson.OPT_SERIALIZE_NUMPY) + b"\n")
        except (OSError, TypeError):
            self._broken = True

    def step(self, sample: dict[str, Any], source: str | None, seen: int) -> None:
        self._write({"step": sample, "source": source, "seen": seen})

    def tick(self, source: str | None, seen: int) -> None:
        self._write({"source": source, "seen": seen})

    def window_end(self, window_s: float | None, losses: list[float | None]) -> None:
        self._write({"window_end": {"window_s": window_s, "losses": losses}})

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def read_stream(path: Path) -> dict[str, Any] | None:
    """What a rank streamed: {"steps", "step_detection", "steps_seen", "window_s"}; None when it
    streamed nothing (no file, or not one readable line)."""
    try:
        raw = path.read_bytes()
    except OSError:
        return None
    steps: list[dict[str, Any]] = []
    source: str | None = None
    seen, window_s, losses = 0, None, None
    for line in raw.splitlines():
        try:
            item = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        if not isinstance(item, dict):
            continue
        if "seen" in item:
            if item.get("source") != source:
                steps, source, window_s, losses = [], item.get("source"), None, None
            seen = item["seen"] if isinstance(item["seen"], int) else seen
            if isinstance(item.get("step"), dict):
                steps.append(item["step"])
        elif isinstance(item.get("window_end"), dict):
            window_s = item["window_end"].get("window_s")
            losses = item["window_end"].get("losses")
    if not steps and not seen:
        return None
    if isinstance(losses, list) and len(losses) == len(steps):
        for step, loss in zip(steps, losses):
            step["loss"] = loss
    return {"steps": steps, "step_detection": source, "steps_seen": seen, "window_s": window_s}
