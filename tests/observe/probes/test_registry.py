"""Probes are registered units: a module of observe/probes/ is found by the scan, run by the session's
runner in its phase and order when it applies, and its value lands in `Record.probes` under its name."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path

import orjson
import pytest
import torch

import torchdoctor.observe.probes as probes_package
from torchdoctor.observe.config import ObserveConfig
from torchdoctor.observe.probes import base
from torchdoctor.observe.probes.base import Phase, Probe, ProbeContext, all_probes, probe
from torchdoctor.observe.probes.runner import ProbeRunner
from torchdoctor.observe.session import ObservationSession, results_path
from torchdoctor.observe.summary import Invocation, build_record
from torchdoctor.probe_values import ProbeKey
from torchdoctor.record import Record

PROBE_MODULE = '''
from torchdoctor.observe.probes.base import Phase, ProbeContext, probe


@probe("timed_steps_seen", Phase.WINDOWS_END, order=0, applies=lambda ctx: True)
def timed_steps_seen(ctx: ProbeContext) -> dict:
    """How many timed steps the step clock measured."""
    return {"steps": len(ctx.clock.samples)}
'''
SEEN: ProbeKey[dict] = ProbeKey("timed_steps_seen")


class _Stop(Exception):
    pass


@pytest.fixture
def new_probe_module(tmp_path, monkeypatch):
    """A probe module dropped into observe/probes/ (a folder added to the package's path), and the
    registry as it was once the test ends."""
    folder = tmp_path / "more_probes"
    folder.mkdir()
    (folder / "timed_steps_seen.py").write_text(PROBE_MODULE)
    all_probes()  # the package's own probes registered first, so the registry put back holds them
    monkeypatch.setattr(probes_package, "__path__", [*probes_package.__path__, str(folder)])
    monkeypatch.setattr(base, "REGISTRY", dict(base.REGISTRY))
    yield
    sys.modules.pop("torchdoctor.observe.probes.timed_steps_seen", None)


def test_a_new_probe_module_is_found_by_the_scan_and_its_value_lands_in_the_record(new_probe_module, tmp_path):
    assert "timed_steps_seen" in [p.name for p in all_probes()]
    config = ObserveConfig(warmup_steps=2, timing_steps=3, profile=False, memory=False, compile=False,
                           threads_probe=False, stop_after_windows=False, out_dir=str(tmp_path / "out"))
    session = ObservationSession(config, Path("train.py"), stop=_Stop)  # in this process, as integrations run it
    session.start()
    try:
        model = torch.nn.Linear(4, 1)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        for _ in range(8):
            model(torch.randn(8, 4)).sum().backward()
            optimizer.step()
            optimizer.zero_grad()
    finally:
        session.finish("script_finished", 0, None)
    result = orjson.loads(results_path(config.out_dir, 0).read_bytes())
    invocation = Invocation(script="train.py", argv=[], cwd=str(tmp_path), config=config.to_dict(), run_id="probe-test")
    record = build_record([result], 0, invocation)
    assert SEEN.of(record) == {"steps": 3}
    assert sorted(record.probes) == ["timed_steps_seen"]  # the others do not apply with threads_probe off
    assert SEEN.of(Record.from_json(record.to_json())) == {"steps": 3}


def test_probes_run_by_phase_then_order_and_a_name_is_registered_once(monkeypatch):
    names = [(p.phase, p.order, p.name) for p in all_probes()]
    assert names == sorted(names, key=lambda n: (n[0].value, n[1], n[2]))
    assert [name for _, _, name in names][:6] == ["handoff", "op_costs", "threads", "anomaly", "freeze", "compile_speed"]
    monkeypatch.setattr(base, "REGISTRY", dict(base.REGISTRY))
    with pytest.raises(ValueError, match="registered twice"):
        probe("threads", Phase.AFTER_WINDOWS, order=9, applies=lambda ctx: True)(lambda ctx: None)
    with pytest.raises(ValueError, match="unknown needs"):
        probe("other", Phase.AFTER_WINDOWS, order=9, applies=lambda ctx: True, needs=frozenset({"gpu"}))


@dataclass
class _Blocks:
    """A stepped probe of `steps` steps (the StepProbe protocol), recording what the runner did."""

    steps: int
    label: str = "probing"
    ended: int = 0
    closed: list[str | None] = field(default_factory=list)

    @property
    def progress(self) -> tuple[int, int]:
        return self.ended, self.steps

    def begin(self) -> None:
        pass

    def step_end(self) -> bool:
        self.ended += 1
        return self.ended == self.steps

    def close(self, reason: str | None) -> None:
        self.closed.append(reason)

    def to_dict(self) -> dict:
        return {"steps": self.ended, "cut": self.closed[-1] if self.closed else None}


def _stepped(name: str, order: int, made: _Blocks | None, applies: bool = True) -> Probe:
    return Probe(name, Phase.AFTER_WINDOWS, order, applies=lambda ctx: applies, start=lambda ctx: made)


def test_the_runner_measures_one_stepped_probe_at_a_time_and_cuts_the_one_measuring_at_the_end():
    first, skipped, last = _Blocks(2), _Blocks(1), _Blocks(5)
    shown: list[tuple[str, int, int]] = []
    context = ProbeContext(ObserveConfig(), facts=None, clock=None, hooks=None, sampler=None)  # type: ignore[arg-type]
    runner = ProbeRunner(context, lambda *shown_now: shown.append(shown_now),
                         [_stepped("first", 1, first), _stepped("off", 2, skipped, applies=False),
                          _stepped("nothing", 3, None), _stepped("last", 4, last)])
    assert not runner.measuring and runner.start_next() and runner.measuring
    assert not runner.step_end() and runner.step_end()  # the first probe's two steps
    assert runner.start_next()  # "off" does not apply, "nothing" found nothing to measure: "last" begins
    runner.step_end()
    runner.close("the script ended during the probe: script_finished")
    assert not runner.measuring and not runner.start_next()
    assert runner.values() == {"first": {"steps": 2, "cut": None},
                               "last": {"steps": 1, "cut": "the script ended during the probe: script_finished"}}
    assert skipped.ended == 0 and shown[0] == ("probing", 0, 2)
