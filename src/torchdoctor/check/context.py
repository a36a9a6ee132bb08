"""One check being run (`CheckContext`): its options, its result filled as it goes, its work
folder, and the collaborators it is given (progress display, stop log, fork servers, baseline
store). `CheckContext.run` turns a refused input, a failed side or a stop into the result."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Protocol, Sequence

from torchdoctor.bench import RoundInfo
from torchdoctor.check.baseline import StoreOpener
from torchdoctor.check.config import CheckOptions
from torchdoctor.check.decisions import ERROR, UNDECIDED
from torchdoctor.check.result import CheckResult
from torchdoctor.check.servers import ForkServers
from torchdoctor.errors import CheckError
from torchdoctor.launch.stops import StopLog, signal_name
from torchdoctor.record import new_run_id


class CheckProgress(Protocol):
    """What the check reports while it runs (`torchdoctor.report.check.RichCheckProgress` is one)."""

    def phase(self, text: str) -> None: ...
    def round(self, info: RoundInfo, elapsed_s: float, budget_s: float) -> None: ...


@dataclass(frozen=True, slots=True)
class Collaborators:
    """What a check is given to run with: `artefacts_dir` (absolute; the check's own folder is made in it),
    the progress display, the stop log of the held stop signals, the fork servers (closed by the
    caller's `with` block) and the opener of the baseline store."""

    artefacts_dir: Path
    progress: CheckProgress
    stops: StopLog
    servers: ForkServers
    open_store: StoreOpener


class CheckContext:
    """One check being run: its result (filled as it goes), options (a window lengthened or taken
    from a baseline replaces them), work folder, collaborators and count of observations."""

    def __init__(self, mode: str, script: str | None, args: Sequence[str], options: CheckOptions,
                 collaborators: Collaborators) -> None:
        self.options, self.original_steps = options, options.steps
        self.progress, self.stops = collaborators.progress, collaborators.stops
        self.servers, self.open_store = collaborators.servers, collaborators.open_store
        self.started = time.monotonic()
        self.work_dir = collaborators.artefacts_dir / ("check-" + new_run_id())
        self.result = CheckResult(decision=UNDECIDED, reason="", mode=mode, script=script, argv=list(args),
                                  settings=options.settings(), work_dir=str(self.work_dir))
        self.observations = 0

    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def stop_name(self) -> str:
        """The stop that interrupted the check: "Ctrl-C" for SIGINT, else the signal's name."""
        first = self.stops.first
        return "Ctrl-C" if first is None or signal_name(first) == "SIGINT" else signal_name(first)

    def run(self, body: Callable[[CheckContext], None]) -> CheckResult:
        """Run `body` and return the result: a CheckError becomes an "error" result, a stop before
        any round completed an undecided one; an empty work folder is removed."""
        result = self.result
        self.work_dir.mkdir(parents=True, exist_ok=True)
        try:
            body(self)
        except CheckError as exc:
            result.decision, result.reason = ERROR, str(exc)
            result.error = {"kind": exc.kind, "side": exc.side, "message": str(exc), "detail": exc.detail}
        except KeyboardInterrupt:
            if result.stop_reason != "interrupted":  # before any round completed
                result.decision, result.stop_reason = UNDECIDED, "interrupted"
                result.reason = (f"interrupted ({self.stop_name()}) after {result.rounds} complete round(s)"
                                 + ("" if result.rounds else ": nothing was measured"))
        result.wall_s = self.elapsed()
        result.observations = self.observations
        if self.work_dir.is_dir() and not any(self.work_dir.iterdir()):
            self.work_dir.rmdir()
            result.work_dir = None
        return result
