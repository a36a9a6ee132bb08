"""Hand-made values for the check's tests: bench Verdicts, Records, and the collaborators of a
check that shows nothing and stores nothing."""

from __future__ import annotations

from contextlib import AbstractContextManager
from pathlib import Path

from torchdoctor.bench import UNCLEAR, RoundInfo, Verdict
from torchdoctor.check.baseline import BaselineStore
from torchdoctor.check.context import Collaborators
from torchdoctor.check.servers import ForkServers
from torchdoctor.launch.stops import StopLog
from torchdoctor.record import Record, StepSample


def verdict(ratio: float, low: float, high: float, kind: str = UNCLEAR, floor: float = 0.02, n: int = 8) -> Verdict:
    return Verdict(kind, ratio, low, high, floor, 0.04, n, n)


def record(walls: list[float], *, forward: float = 0.0, batch: int | None = 4, peak: int | None = None) -> Record:
    record = Record(steps=[StepSample(i, w, forward_s=forward, batch_size=batch) for i, w in enumerate(walls)])
    if peak is not None:
        record.memory = {"breakdown": {"peak_bytes": peak, "method": "mem_tracker", "device": "cpu",
                                       "categories_bytes": {"activations": peak // 2, "parameters": peak // 2}}}
    return record


class SilentProgress:
    """A `check.CheckProgress` that shows nothing."""

    def phase(self, text: str) -> None:
        pass

    def round(self, info: RoundInfo, elapsed_s: float, budget_s: float) -> None:
        pass


def _no_store() -> AbstractContextManager[BaselineStore]:
    raise AssertionError("this check opened the baseline store")


def collaborators(artefacts_dir: Path, servers: ForkServers, stops: StopLog | None = None) -> Collaborators:
    """What a check runs with in a test: nothing shown, no stop unless `stops`, no baseline store."""
    return Collaborators(artefacts_dir=artefacts_dir, progress=SilentProgress(), stops=stops or StopLog(),
                         servers=servers, open_store=_no_store)
