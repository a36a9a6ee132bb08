"""Candidate order: findings by upside first, then the default order."""

from __future__ import annotations

import pytest

from tests.findings import finding
from torchdoctor.record import Record
from torchdoctor.tune.candidates import DEFAULT_ORDER, ordered_candidates
from torchdoctor.tune.errors import TuneInputError


def test_knobs_named_by_findings_come_first_by_upside() -> None:
    record = Record(findings=[finding("a", upside=0.1, knob="compile"), finding("b", upside=0.6, knob="threads"),
                              finding("c", upside=0.9)])
    order = ordered_candidates(record, allow_batch_size=False, only=[])
    assert order[:2] == ["threads", "compile"]
    assert order[2:] == [n for n in DEFAULT_ORDER if n not in ("threads", "compile", "batch_size")]


def test_batch_size_only_with_allow_batch_size() -> None:
    assert "batch_size" not in ordered_candidates(Record(), allow_batch_size=False, only=["batch_size"])
    assert "batch_size" in ordered_candidates(Record(), allow_batch_size=True, only=[])


def test_unknown_knob_is_a_user_error() -> None:
    with pytest.raises(TuneInputError, match="warp_drive"):
        ordered_candidates(Record(), allow_batch_size=False, only=["warp_drive"])


def test_a_record_stored_with_layer_topic_knobs_is_rediagnosed_for_its_knobs() -> None:
    # Before findings named registered knobs, TD-COMP-009 stored `compute.threads`; the rules name `threads`.
    from pathlib import Path

    fixture = Path(__file__).resolve().parents[1] / "rules" / "fixtures" / "TD-COMP-009" / "fires.json"
    record = Record.load(fixture)
    record.findings = [finding("TD-COMP-009", upside=0.5, knob="compute.threads")]
    assert ordered_candidates(record, allow_batch_size=False, only=[])[0] == "threads"


def test_only_registered_knob_names_count() -> None:
    # a name that is not a knob (here in a Record whose findings would be re-diagnosed to nothing) is ignored
    record = Record(findings=[finding("a", upside=0.9, knob="warp_drive")])
    assert ordered_candidates(record, allow_batch_size=False, only=[]) == \
        [n for n in DEFAULT_ORDER if n != "batch_size"]


def test_a_fix_that_sets_the_intra_op_threads_beside_its_workers_is_one_fix() -> None:
    from torchdoctor.finding import Fix
    from torchdoctor.tune.candidates import fix_companions

    workers_fix = Fix("Load batches in 1 worker process(es); give the step 1 intra-op thread(s).",
                      "torch.set_num_threads(1)\nloader = DataLoader(dataset, num_workers=1, persistent_workers=True)")
    record = Record(findings=[finding("TD-DATA-002", knob="num_workers", fix=workers_fix),
                              finding("TD-COMP-003", knob="compile", fix=Fix("compile", "model = torch.compile(model)"))])
    assert fix_companions(record) == {"num_workers": {"threads": 1}}
