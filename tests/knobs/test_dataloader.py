"""DataLoader knobs intercept construction and are undone."""

from __future__ import annotations

import torch
from torch.utils.data import DataLoader, TensorDataset

from tests.findings import finding
from torchdoctor.finding import Fix
from torchdoctor.knobs import apply_knobs

DATA = TensorDataset(torch.arange(16.0))


def test_num_workers_overrides_the_scripts_value_and_undo_restores_it() -> None:
    undo = apply_knobs({"num_workers": 2})
    try:
        assert DataLoader(DATA, batch_size=4, num_workers=0).num_workers == 2
        assert DataLoader(DATA, 4).num_workers == 2  # positional arguments too
    finally:
        undo()
    assert DataLoader(DATA, batch_size=4).num_workers == 0


def test_worker_options_compose_with_num_workers_set_by_a_knob() -> None:
    undo = apply_knobs({"prefetch_factor": 4, "persistent_workers": True, "num_workers": 1})
    try:
        loader = DataLoader(DATA, batch_size=4)
        assert (loader.num_workers, loader.prefetch_factor, loader.persistent_workers) == (1, 4, True)
    finally:
        undo()


def test_worker_options_leave_a_loader_without_workers_alone() -> None:
    undo = apply_knobs({"prefetch_factor": 4})
    try:
        loader = DataLoader(DATA, batch_size=4)  # DataLoader would reject prefetch_factor here
        assert loader.prefetch_factor is None
    finally:
        undo()


def test_batch_size_knob_changes_the_batch() -> None:
    undo = apply_knobs({"batch_size": 8})
    try:
        assert next(iter(DataLoader(DATA, batch_size=4)))[0].shape[0] == 8
    finally:
        undo()


def test_batch_size_knob_leaves_a_loader_it_would_grow_more_than_tune_tries_and_says_so(capsys) -> None:
    undo = apply_knobs({"batch_size": 2**24})  # a hand-edited result: the script was killed for memory
    try:
        assert DataLoader(DATA, batch_size=4).batch_size == 4
        assert DataLoader(DATA, batch_size=2**21).batch_size == 2**24  # 8 times its own: what tune tries
    finally:
        undo()
    assert capsys.readouterr().err == ("torchdoctor: batch_size=16777216 not applied to a DataLoader of batch size 4: "
                                       "more than 8 times its own (what tune tries at most)\n")


def test_an_io_bound_loader_searches_workers_beyond_the_cores_starting_at_the_suggestion() -> None:
    from torchdoctor.knobs import REGISTRY
    from torchdoctor.record import Record

    loader = {"num_workers": 0, "iterable_dataset": False}
    cpu_bound = Record(env={"cpu": {"affinity_cores": 2}, "dataloaders": [loader]})
    knob = REGISTRY["num_workers"]
    assert (knob.int_range(cpu_bound).high, knob.int_range(cpu_bound).first) == (2, 1)
    io_bound = Record(env=cpu_bound.env, findings=[finding(
        "TD-DATA-007", knob="num_workers",
        fix=Fix("Keep more reads in flight.", "DataLoader(dataset, num_workers=8, prefetch_factor=4)"))])
    searched = knob.int_range(io_bound)
    assert (searched.low, searched.high, searched.first) == (1, 8, 8)
    assert knob.applies(Record(env={"cpu": {"affinity_cores": 2}, "dataloaders": [{**loader, "num_workers": 4}]},
                               findings=io_bound.findings))


def test_the_diagnosis_suggestion_for_an_io_bound_loader_is_what_tune_tries_first() -> None:
    from pathlib import Path

    from torchdoctor.knobs import REGISTRY
    from torchdoctor.record import Record
    from torchdoctor.rules import diagnose

    fixtures = Path(__file__).resolve().parents[1] / "rules" / "fixtures" / "TD-DATA-007"
    for wait_s, needed in ((0.05, 1), (0.09, 9)):  # of a 100 ms step: load over compute, 50/50 and 90/10
        record = Record.load(fixtures / "fires.json")  # not diagnosed yet, as tune's baseline
        record.env["cpu"] = {"physical_cores": 2, "logical_cores": 2, "affinity_cores": 2}
        for step in record.steps:
            step.data_wait_s = wait_s
        (finding,) = diagnose(record, select=["TD-DATA-007"]).findings
        assert finding.evidence["workers_needed"] == needed
        span = REGISTRY["num_workers"].int_range(record)
        assert f"num_workers={span.first}" in finding.fix.code and span.first == needed  # tried first
        assert span.high == max(2, needed)  # beyond the 2 cores when the reads need it
    busy = Record.load(fixtures / "silent.json")  # the loading computes: one worker per core at most
    busy.env["cpu"] = record.env["cpu"]
    assert REGISTRY["num_workers"].int_range(busy).high == 2


def test_a_cpu_bound_loader_is_tried_first_with_the_count_its_finding_names_within_the_cores() -> None:
    """The demo on 2 cores: TD-DATA-002 names two workers (its bound favours them: one worker x1.09,
    two x1.95 measured), so tune's one integer trial is two workers, not cores - 1."""
    from torchdoctor.knobs import REGISTRY
    from torchdoctor.record import Record, StepSample
    from torchdoctor.rules import diagnose

    steps = [StepSample(index=i, wall_s=0.157, data_wait_s=0.124, data_wait_cpu_s=0.124, forward_s=0.033)
             for i in range(20)]
    env = {"cpu": {"physical_cores": 2, "logical_cores": 2, "affinity_cores": 2}, "torch": {"num_threads": 1},
           "dataloaders": [{"num_workers": 0, "batch_size": 32, "iterable_dataset": False}]}
    record = Record(steps=steps, env=env)
    assert REGISTRY["num_workers"].int_range(record).first == 1  # not diagnosed: cores - 1
    record.findings = diagnose(record, select=["TD-DATA-002"]).findings
    span = REGISTRY["num_workers"].int_range(record)
    assert (span.first, span.high) == (2, 2) and "num_workers=2" in record.findings[0].fix.code
