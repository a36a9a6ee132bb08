"""Observing the sides: no observation starts once a stop was requested, and the check then ends
undecided with what it measured."""

from __future__ import annotations

import signal
from pathlib import Path

from torchdoctor.check.config import CheckOptions
from torchdoctor.check.context import CheckContext
from torchdoctor.check.decisions import UNDECIDED
from torchdoctor.check.runner import Runner
from torchdoctor.check.servers import ForkServers
from torchdoctor.check.sides import Side
from torchdoctor.launch.stops import StopLog
from tests.check.values import collaborators


def test_a_stop_between_observations_starts_no_other_and_the_check_is_undecided(tmp_path: Path) -> None:
    stops = StopLog(held=[signal.SIGTERM])  # held while no observation runs: torchdoctor goes on
    with ForkServers() as servers:
        context = CheckContext("ref", "train.py", [], CheckOptions(), collaborators(tmp_path, servers, stops))

        def body(context: CheckContext) -> None:
            Runner([Side("A", "REF", tmp_path / "train.py", str(tmp_path))], [], context).observe("A")
            raise AssertionError("an observation was started after the stop")

        result = context.run(body)
    assert result.decision == UNDECIDED and result.stop_reason == "interrupted"
    assert result.reason == "interrupted (SIGTERM) after 0 complete round(s): nothing was measured"
    assert result.observations == 0 and result.work_dir is None  # the empty work folder is removed
