"""The rule registry: unique ids, documented rules with fixtures, selection, and missing evidence."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from torchdoctor.finding import LAYERS
from torchdoctor.record import Record
from torchdoctor.rules import UnknownRuleError, all_rules, diagnose, diagnose_record, selected_rules

FIXTURES = Path(__file__).resolve().parent / "fixtures"
DOCS = Path(__file__).resolve().parents[2] / "docs" / "rules.md"


def test_rule_ids_are_unique_stable_and_match_their_layer() -> None:
    rules = all_rules()
    assert len({r.id for r in rules}) == len(rules) >= 30
    prefixes = {"data": "DATA", "compute": "COMP", "memory": "MEM", "scale": "SCALE", "config": "CONF"}
    for r in rules:
        assert re.fullmatch(rf"TD-{prefixes[r.layer]}-\d{{3}}", r.id), r.id
    assert {r.layer for r in rules} == set(LAYERS)


def test_every_knob_a_rule_names_is_a_registered_tune_knob() -> None:
    from torchdoctor.knobs import REGISTRY as KNOBS

    named = {r.id: r.knob for r in all_rules() if r.knob is not None}
    assert {rule_id: knob for rule_id, knob in named.items() if knob not in KNOBS} == {}
    # the knobs that the old `layer.topic` names and alias table used to reach
    assert named["TD-COMP-002"] == named["TD-COMP-003"] == "compile"
    assert named["TD-COMP-007"] == "no_anomaly_detection" and named["TD-COMP-012"] == "optimizer_impl"
    assert named["TD-SCALE-001"] == "bucket_cap_mb" and named["TD-COMP-011"] == "zero_grad_set_to_none"


def test_a_finding_names_its_rules_knob() -> None:
    record = Record.load(FIXTURES / "TD-COMP-009" / "fires.json")
    (finding,) = diagnose(record, select=["TD-COMP-009"]).findings
    assert finding.knob == "threads" and finding.to_dict()["knob"] == "threads"


@pytest.mark.parametrize("rule", all_rules(), ids=lambda r: r.id)
def test_every_rule_has_a_docstring_fixtures_and_a_docs_entry(rule) -> None:
    assert len(rule.doc) > 40, f"{rule.id} needs a docstring saying what it reads and its source"
    assert (FIXTURES / rule.id / "fires.json").exists() and (FIXTURES / rule.id / "silent.json").exists()
    assert f"`{rule.id}`" in DOCS.read_text(encoding="utf-8")


def test_select_and_ignore_take_ids_prefixes_and_layers() -> None:
    assert {r.layer for r in selected_rules(select=["memory"])} == {"memory"}
    assert all(r.id.startswith("TD-DATA") for r in selected_rules(select=["td-data"]))
    assert "TD-COMP-003" not in {r.id for r in selected_rules(ignore=["TD-COMP-003"])}
    with pytest.raises(UnknownRuleError, match="unknown rule 'TD-NOPE'"):
        selected_rules(select=["TD-NOPE"])


def test_an_empty_record_gives_no_findings_and_notes_every_skipped_rule() -> None:
    result = diagnose(Record())
    assert result.findings == []
    assert any(s.startswith("TD-MEM-001: no ") for s in result.skipped)


def test_a_record_with_sections_in_an_unexpected_layout_is_skipped_not_crashed() -> None:
    record = Record(trace={"ranks": [{"rank": 0, "device": {"temporal": []}, "window": {"state": "ok"}, "steps": []}]})
    result = diagnose(record, select=["compute"])
    assert result.findings == [] and any("trace.ranks[0].device.temporal" in s for s in result.skipped)


def test_lint_hits_without_measured_cost_are_info_hints_ranked_last() -> None:
    record = Record.load(FIXTURES / "TD-DATA-002" / "fires.json")
    record.lint = {"violations": [{"code": "TDL203", "layer": "compute", "message": "anomaly on", "path": "t.py",
                                   "line": 3, "col": 0, "rule_hint": "compute.debug_tools"}]}
    findings = diagnose_record(record)
    assert findings[0].id == "TD-DATA-002"
    assert findings[-1].id == "TDL203" and findings[-1].severity == "info" and findings[-1].upside == 0.0


def test_operator_shares_from_a_disturbed_profiled_step_are_not_trusted() -> None:
    record = Record.load(FIXTURES / "TD-COMP-004" / "fires.json")
    record.summary.step_s = 0.010  # the profiled step (10 ms) matches the timed steps
    assert [f.id for f in diagnose(record, select=["TD-COMP-004"]).findings] == ["TD-COMP-004"]
    record.summary.step_s = 0.004  # the profiled step took 2.5x the median timed step
    result = diagnose(record, select=["TD-COMP-004"])
    assert result.findings == [] and "representative profiled step" in result.skipped[0]


def test_scale_rules_read_the_observed_ranks_when_there_is_no_multi_rank_trace() -> None:
    record = Record.load(FIXTURES / "TD-DATA-002" / "silent.json")
    record.distributed = {"stragglers": [{"rank": 1, "excess_s": 0.049, "excess_of_step_fraction": 0.95,
                                          "cause": "compute or host work"}],
                          "runtime": {"sampler": {"set_epoch_missing": True}}}
    found = {f.id: f for f in diagnose(record, select=["scale"]).findings}
    assert found["TD-SCALE-002"].upside == 0.95 and found["TD-SCALE-002"].severity == "problem"
    assert found["TD-SCALE-005"].evidence["set_epoch_missing_measured"] is True


def test_a_hot_operator_must_be_hot_in_every_profiled_step() -> None:
    record = Record.load(FIXTURES / "TD-COMP-004" / "fires.json")
    steps = record.trace["ranks"][0]["steps"]
    for step in steps:
        step["host"] = {"top_by_self_time": [{"name": "aten::sort", "self_us": 6000.0}]}
    assert [f.id for f in diagnose(record, select=["TD-COMP-004"]).findings] == ["TD-COMP-004"]
    steps[1]["host"] = {"top_by_self_time": [{"name": "aten::sort", "self_us": 500.0}]}  # a stall elsewhere
    assert diagnose(record, select=["TD-COMP-004"]).findings == []


def test_a_stall_in_one_call_of_an_operator_does_not_make_it_hot() -> None:
    """Its slowest call counts at its other calls' mean: a call held for a time slice is not a slow op."""
    record = Record.load(FIXTURES / "TD-COMP-004" / "fires.json")
    ops = record.trace["ranks"][0]["host"]["top_by_self_time"]
    ops[0].update(count=3, self_us=20000.0, max_self_us=6800.0)  # three calls alike: a hot operator
    assert [f.id for f in diagnose(record, select=["TD-COMP-004"]).findings] == ["TD-COMP-004"]
    ops[0].update(self_us=20000.0, max_self_us=19600.0)  # 200 us calls and one of 19.6 ms
    assert diagnose(record, select=["TD-COMP-004"]).findings == []



def test_a_distributed_section_of_the_wrong_shape_is_skipped_naming_the_field() -> None:
    result = diagnose(Record(distributed={"stragglers": "rank 1"}), select=["scale"])
    assert result.findings == [] and any("distributed.stragglers" in s for s in result.skipped)
