"""One observation hosted by a training loop's own callbacks, in the training process itself.

The parts are `torchdoctor diagnose`'s: `ObservationSession` installs the same hooks and step clock
the observed child does (steps detected from the optimizer, backward or forward exactly as without
the framework), `build_record` turns its results into the Record, and the diagnose workflow's
analyse -> rules -> store -> report chain runs on it. What differs is only who starts and ends it:
the callback starts it when training starts and ends it once every window is measured (`poll`,
called at each step end; training then goes on unobserved, with every patch undone) or when
training ends or fails first (`finish`). The session never stops the script: it is the user's run.

With `watch=True` the observation follows the whole run instead, as `torchdoctor watch` does:
after the windows only the lean observation stays (one step hook, a stack sampler thread, the
stream on disk) until training ends, and the Record gains the whole run's breakdown from the
process's start (workflow.watch.report_whole_run).
"""

from __future__ import annotations

import os
import sys
import time
import traceback
from dataclasses import replace
from pathlib import Path
from typing import Any, Iterable

import orjson
import psutil

from torchdoctor.analyse import analyse_record
from torchdoctor.observe.config import ObserveConfig
from torchdoctor.observe.session import ObservationSession, results_path
from torchdoctor.observe.summary import Invocation, build_record
from torchdoctor.record import Record, new_run_id
from torchdoctor.store import run_dir_for
from torchdoctor.workflow.diagnose import DiagnoseOutputs, diagnose_and_report
from torchdoctor.workflow.watch import report_whole_run


class _NeverRaised(BaseException):
    """The session's stop signal; never raised here, as `stop_after_windows` is off in the loop."""


def _loaders(value: Any) -> Iterable[Any]:
    """DataLoaders inside what a framework holds (one loader, or a list or dict of them)."""
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, (list, tuple)):
        for item in value:
            yield from _loaders(item)
    elif hasattr(value, "num_workers") and hasattr(value, "dataset"):
        yield value


class InLoopObservation:
    """Start, poll and finish one observation of the calling process's training loop.

    `config`: the windows to measure (ObserveConfig; `stop_after_windows` is ignored; unless given, no
    compile probe: it would compile the user's model for seconds to minutes of their own training). `outputs`:
    where the Record goes, as for `torchdoctor diagnose` (the store, JSON/HTML files, the console).
    `integration` names the host in `record.config["integration"]`. `watch`: follow the whole run
    to the end of training (ObserveConfig.watch). After `finish`, `record` holds the Record with its
    findings (None until then).
    """

    def __init__(self, integration: str, config: ObserveConfig | None = None,
                 outputs: DiagnoseOutputs | None = None, *, watch: bool = False) -> None:
        self.integration = integration
        self.config = config or ObserveConfig(compile_probe=False)
        if watch:
            self.config = replace(self.config, stop_after_windows=False, watch=True)
        self.outputs = outputs or DiagnoseOutputs()
        self.record: Record | None = None
        self._session: ObservationSession | None = None
        self._run_id = ""

    @property
    def active(self) -> bool:
        return self._session is not None

    def start(self, loaders: Any = ()) -> None:
        """Install the hooks. `loaders`: DataLoaders the framework built before this call (their
        construction was not seen, so their settings are noted here, as the hook would have)."""
        if self._session is not None or self.record is not None:
            return  # one observation per callback: a second fit() is not observed again
        self._run_id = new_run_id()
        out_dir = run_dir_for(self.outputs.store_path, self._run_id)
        config = replace(self.config, stop_after_windows=False, out_dir=str(out_dir), progress_path="")
        self._session = ObservationSession(config, Path(sys.argv[0]).resolve(), stop=_NeverRaised)
        self._session.start()
        for loader in _loaders(loaders):
            self._session.facts.add_dataloader(loader)

    def poll(self) -> Record | None:
        """At a step end: finish once every window (and the memory step, and the probes after it) is
        measured; a whole run's observation goes on to `finish`."""
        session = self._session
        if session is None or session.watch is not None or not session.clock.done \
                or session.measuring_after_windows:
            return None
        return self.finish("completed")

    def finish(self, how: str = "script_finished", error: BaseException | None = None) -> Record | None:
        """Undo every patch, build the Record and diagnose it (`how`: as the observed child says
        it: completed, script_finished, script_error). Does nothing when not observing."""
        session, self._session = self._session, None
        if session is None:
            return None
        text = "".join(traceback.format_exception(error)) if error is not None else None
        code = 1 if error is not None else 0
        session.finish(how, code, text)
        result = orjson.loads(results_path(session.config.out_dir, session.rank).read_bytes())
        config = replace(self.config, stop_after_windows=False).to_dict()
        invocation = Invocation(script=str(session.script), argv=sys.argv[1:], cwd=os.getcwd(), config=config,
                                run_id=self._run_id)
        record = build_record([result], code, invocation)
        record.config["integration"] = self.integration
        if session.rank == 0 and session.watch is not None:
            spawn = psutil.Process().create_time()
            record = report_whole_run(record, session.config.out_dir, spawn, time.time(), self.outputs)
        elif session.rank == 0:
            record = diagnose_and_report(analyse_record(record), self.outputs)
        self.record = record
        return record
