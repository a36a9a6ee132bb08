"""Observing the sides of a check one observation at a time (`Runner`): each a fresh process,
forked from the check's fork server of its interpreter unless `fork_server` is off; a failed,
timed-out or interrupted observation becomes CheckError or KeyboardInterrupt."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any, Sequence

from torchdoctor.check.context import CheckContext
from torchdoctor.check.figures import observation_figures
from torchdoctor.check.sides import Side
from torchdoctor.errors import CheckError
from torchdoctor.launch import LaunchConfig, observe
from torchdoctor.launch.forkserver import ForkServerError
from torchdoctor.launch.log import log_tail
from torchdoctor.record import Record

class Runner:
    """Observes the sides of `context`'s check with its current options; keeps each side's figures
    and the figure the gate compares (`metric`: "step_s" or "sample_s")."""

    def __init__(self, sides: Sequence[Side], args: Sequence[str], context: CheckContext) -> None:
        self.sides = {s.name: s for s in sides}
        self.args, self.context = list(args), context
        self.figures: dict[str, list[dict[str, Any]]] = {s.name: [] for s in sides}
        self.metric = "step_s"

    @classmethod
    def started(cls, context: CheckContext, sides: Sequence[Side], args: Sequence[str]) -> Runner:
        """A runner of `sides` (A, if given, first; B last), described in the result, with its fork
        servers ready."""
        result = context.result
        result.a = sides[0].describe() if sides[0].name == "A" else result.a
        result.b = sides[-1].describe()
        runner = cls(sides, args, context)
        runner.start_servers()
        return runner

    def start_servers(self) -> None:
        """Each side's fork server, ready (one per interpreter); CheckError when one cannot start."""
        if not self.context.options.fork_server:
            return
        for side in self.sides.values():
            side.server = self.context.servers.for_python(side.python)
        for python, side in {side.python: side for side in self.sides.values()}.items():
            self.context.progress.phase(f"starting the fork server ({python})")
            try:
                side.server.wait_ready()
            except ForkServerError as exc:
                raise CheckError(f"side {side.name} ({side.label}): {exc}", kind="side_failed",
                                 side=side.name) from None

    def observe(self, name: str, *, purpose: str = "round", profile: bool = False) -> Record:
        """One observation of side `name` (its artefacts kept when profiled); none is started once a
        stop was requested (KeyboardInterrupt)."""
        if self.context.stops.requested:
            raise KeyboardInterrupt
        side, options, work_dir = self.sides[name], self.context.options, self.context.work_dir
        self.context.observations += 1
        tag = f"{self.context.observations:03d}-{name}-{purpose}"
        log = work_dir / f"{tag}.log"
        launch = LaunchConfig(timeout_s=options.timeout_s, cwd=side.cwd, python_path=side.python_path,
                              log_path=str(log), server=side.server, python=None if side.server else side.python)
        record = observe(side.script, self.args, options.observe_config(profile=profile), launch,
                         out_dir=work_dir / tag)
        raise_on_failure(side, record, log, options.timeout_s)
        if not profile:
            shutil.rmtree(work_dir / tag, ignore_errors=True)  # the Record holds what it measured
        return record

    def measure(self, name: str) -> float:
        """One observation of side `name`: its sample for the gate (its step or per-sample time)."""
        figures = observation_figures(self.observe(name))
        self.figures[name].append(figures)
        value = figures[self.metric]
        if not value:
            raise CheckError(f"side {name} measured no {self.metric.replace('_s', '')} time", kind="side_failed",
                             side=name)
        return value


def raise_on_failure(side: Side, record: Record, log: Path, timeout_s: float) -> None:
    """CheckError for an observation that timed out, failed or measured no step; a stop that
    torchdoctor passed on to the script (Ctrl-C, SIGTERM) ends the check as a Ctrl-C here would:
    `KeyboardInterrupt`, which the check turns into an undecided result."""
    who = f"side {side.name} ({side.label})"
    if record.exit.reason == "timeout":
        raise CheckError(f"{who} timed out: one observation ran longer than {timeout_s:g} s (--timeout)",
                         kind="side_failed", side=side.name, detail=log_tail(log))
    if record.exit.reason == "interrupted":
        raise KeyboardInterrupt
    if record.exit.status != 0 or not record.steps:
        lines = (record.exit.traceback or "").strip().splitlines()
        what = lines[-1] if lines else record.exit.message or "no step was measured"
        raise CheckError(f"{who} failed ({record.exit.reason}): {what}", kind="side_failed", side=side.name,
                         detail=record.exit.traceback or log_tail(log) or record.exit.message)
