"""Sweep max batch size x max delay: one real server process per setting, the same load each.

Each point starts `torchdoctor serve` in a child process on a free loopback port (so the load
generator and the server do not share an interpreter), waits for its "listening on" line, runs
the load, and stops it. The recommendation is the setting with the highest achieved QPS whose
p99 latency is within the budget and which had no errors.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import re
import subprocess
import threading
import sys
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

import orjson

from torchdoctor.serve.errors import ServeConfigError
from torchdoctor.serve.load import LoadConfig, LoadResult, run_load

SCHEMA_VERSION = 1
_LISTENING = re.compile(r"listening on (http://\S+)")


@dataclass(slots=True)
class SweepPoint:
    max_batch_size: int
    max_delay_ms: float
    load: LoadResult


@dataclass(slots=True)
class SweepResult:
    """Every point measured, the budget, and the chosen point (None when none met the budget)."""

    model: str
    latency_budget_ms: float
    points: list[SweepPoint] = field(default_factory=list)
    recommended: SweepPoint | None = None
    reason: str = ""
    schema_version: int = SCHEMA_VERSION

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def to_json(self) -> bytes:
        return orjson.dumps(self.to_dict(), option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS)


def run_sweep(
    factory: str,
    batch_sizes: list[int],
    delays_ms: list[float],
    load: LoadConfig,
    latency_budget_ms: float,
    progress: Callable[[str], None] | None = None,
) -> SweepResult:
    """Measure every (batch size, delay) pair with `load` (its url is replaced per point)."""
    result = SweepResult(model=factory, latency_budget_ms=latency_budget_ms)
    for max_batch_size in batch_sizes:
        for delay_ms in delays_ms:
            if progress:
                progress(f"max batch size {max_batch_size}, max delay {delay_ms:g} ms")
            with server_process(factory, max_batch_size, delay_ms) as url:
                measured = asyncio.run(run_load(dataclasses.replace(load, url=url)))
            result.points.append(SweepPoint(max_batch_size, delay_ms, measured))
    result.recommended, result.reason = choose(result.points, latency_budget_ms)
    return result


def choose(points: list[SweepPoint], latency_budget_ms: float) -> tuple[SweepPoint | None, str]:
    """The error-free point within the p99 budget with the highest QPS, and why."""
    within = [
        p for p in points
        if not p.load.errors and p.load.latency_s_p99 is not None
        and p.load.latency_s_p99 * 1e3 <= latency_budget_ms
    ]
    if not within:
        return None, f"no setting kept p99 latency within {latency_budget_ms:g} ms without errors"
    best = max(within, key=lambda p: (p.load.achieved_qps, -p.load.latency_s_p99))
    return best, (
        f"highest throughput ({best.load.achieved_qps:.0f} QPS) with p99 "
        f"{best.load.latency_s_p99 * 1e3:.1f} ms within the {latency_budget_ms:g} ms budget"
    )


@contextlib.contextmanager
def server_process(factory: str, max_batch_size: int, max_delay_ms: float,
                   start_timeout_s: float = 120.0) -> Iterator[str]:
    """A `torchdoctor serve` child on a free loopback port; yields its URL, stops it on exit."""
    command = [sys.executable, "-m", "torchdoctor", "serve", factory, "--port", "0",
               "--max-batch-size", str(max_batch_size), "--max-delay-ms", str(max_delay_ms)]
    child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        yield _wait_for_url(child, start_timeout_s)
    finally:
        child.terminate()
        try:
            child.wait(timeout=10)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()


def _wait_for_url(child: subprocess.Popen, timeout_s: float) -> str:
    found: list[str] = []

    def read() -> None:
        for line in child.stdout:  # type: ignore[union-attr]
            match = _LISTENING.search(line)
            if match:
                found.append(match.group(1))
                return

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(timeout_s)
    if not found:
        child.kill()
        stderr = child.stderr.read() if child.stderr else ""  # type: ignore[union-attr]
        raise ServeConfigError(f"the server did not start within {timeout_s:g} s: {stderr[-800:]}")
    return found[0]
