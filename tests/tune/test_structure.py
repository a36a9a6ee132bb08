"""The script's structure, read as counts from a profiled run: which knobs the search must try
first and before it may stop, whatever the machine's load made the timed shares."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from torchdoctor.record import Record
from torchdoctor.tune.structure import DATA_WAIT_SHARE, Structure, preconditions, script_structure

FIXTURES = Path(__file__).parents[1] / "rules" / "fixtures"


def _record(path: str, **env: object) -> Record:
    record = Record.load(FIXTURES / path)
    record.env = {**record.env, **env}
    return record


def test_tiny_operators_that_dominate_a_step_require_compile() -> None:
    record = _record("TD-COMP-003/fires-tiny-ops-zoo.json", models=[{"class": "Net"}])
    structure = script_structure(record)
    assert structure.ops_per_step == 3204.0  # counted: 3 profiled steps of 9612 operators
    assert structure.small_op_share > 0.9
    assert "compile" in preconditions(structure)
    assert "tiny operators dominate: 3204 operators a step" in preconditions(structure)["compile"]


def test_few_operators_or_few_tiny_ones_do_not_require_compile() -> None:
    few = script_structure(_record("TD-COMP-003/fires.json", models=[{"class": "Net"}]))
    assert few.ops_per_step < 300 and "compile" not in preconditions(few)
    assert "compile" not in preconditions(Structure(ops_per_step=2000, small_op_share=0.2, models=1))
    assert "compile" not in preconditions(Structure(ops_per_step=2000, small_op_share=0.9, models=0))


def test_the_counts_hold_when_the_same_run_was_stretched_by_load() -> None:
    record = _record("TD-COMP-003/fires-tiny-ops-zoo.json", models=[{"class": "Net"}])
    stretched = dataclasses.replace(record, steps=[dataclasses.replace(s, wall_s=s.wall_s * 30) for s in record.steps])
    assert preconditions(script_structure(stretched)) == preconditions(script_structure(record))


def test_anomaly_mode_a_forward_loop_with_gradients_a_waiting_loader_and_oversubscribed_threads() -> None:
    structure = Structure(anomaly=True, backward=False, grad_in_forward=True, loader_workers=(0,),
                          data_wait_share=0.3, threads=8, cores=2)
    assert list(preconditions(structure)) == ["no_anomaly_detection", "inference_mode", "num_workers", "threads"]
    assert "8 intra-op threads on 2 cores" in preconditions(structure)["threads"]


def test_a_loader_the_step_does_not_wait_for_requires_no_workers() -> None:
    idle = Structure(loader_workers=(0,), data_wait_share=DATA_WAIT_SHARE / 2)
    assert "num_workers" not in preconditions(idle)
    assert "num_workers" not in preconditions(Structure(loader_workers=(4,), data_wait_share=0.5))


def test_a_record_read_from_a_fixture_with_anomaly_mode_requires_its_knob() -> None:
    structure = script_structure(_record("TD-COMP-007/fires.json"))
    assert structure.anomaly and "no_anomaly_detection" in preconditions(structure)
    assert structure.ops_per_step is None  # no trace: no operator counts, nothing claimed from them
