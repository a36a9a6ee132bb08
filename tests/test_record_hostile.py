"""Reading a Record someone else wrote: bounded, type-checked, and drawable.

Property: any JSON gives a Record or a RecordFormatError naming the field, and any Record that
loads draws in the terminal without an exception.
"""

from __future__ import annotations

import json
from io import StringIO

import pytest
from hypothesis import given
from hypothesis import strategies as st
from rich.console import Console

from tests.fuzzing import fuzz_settings
from torchdoctor.errors import RecordFormatError
from torchdoctor.finding import Finding, Fix
from torchdoctor.record import Record
from torchdoctor.report.console import render_record

FUZZ = fuzz_settings(150)
FINDING = Finding("X", "compute", "info", "t", 0.0, {}, "", Fix("")).to_dict()


def _draw(record: Record) -> str:
    console = Console(file=StringIO(), width=100, color_system=None, record=True)
    render_record(record, console)
    return console.export_text()


@pytest.mark.parametrize(
    ("data", "message"),
    [({"argv": "abc"}, "'argv' should be a list of strings, not a string"),
     ({"summary": {"num_steps": "x"}}, "'summary.num_steps' should be an integer, not a string"),
     ({"summary": {"step_s": True}}, "'summary.step_s' should be a number or null, not true or false"),
     ({"steps": [1, 2]}, "'steps\\[0\\]' should be an object, not an integer"),
     ({"steps": [{"index": 1}]}, "'steps\\[0\\].wall_s' is missing"),
     ({"exit": "boom"}, "'exit' should be an object, not a string"),
     ({"findings": [{}, 3]}, "'findings\\[1\\]' should be an object, not an integer"),
     ({"findings": [{"id": "X"}]}, "'findings\\[0\\].layer' is missing"),
     ({"findings": [{**FINDING, "upside": "big"}]}, "'findings\\[0\\].upside' should be a number, not a string"),
     ({"findings": [{**FINDING, "caveats": "cut"}]}, "'findings\\[0\\].caveats' should be a list of strings or null"),
     ({"findings": [{**FINDING, "fix": {"code": "x"}}]}, "'findings\\[0\\].fix.text' is missing"),
     ({"trace": [1]}, "'trace' should be an object or null, not a list")],
)  # fmt: skip
def test_a_field_of_the_wrong_type_is_a_record_format_error_naming_it(data, message):
    with pytest.raises(RecordFormatError, match=message):
        Record.from_json(json.dumps({"schema_version": 1, **data}))


def test_nesting_deeper_than_any_record_has_is_refused_before_parsing():
    head = '{"schema_version": 1, "env": '
    text = head + '{"a": ' * 1000 + "1" + "}" * 1000 + "}"
    sixty_fifth = len(head) + 63 * len('{"a": ')  # the Record is level 1, env's objects 2, 3, ...
    with pytest.raises(RecordFormatError, match=f"nesting deeper than 64 levels at byte {sixty_fifth}"):
        Record.from_json(text)


def test_a_true_schema_version_is_not_version_one():
    with pytest.raises(RecordFormatError, match="invalid schema_version"):
        Record.from_json('{"schema_version": true}')


def test_a_record_with_many_findings_and_warnings_draws_a_bounded_report():
    record = Record.from_json(json.dumps({"schema_version": 1, "findings": [FINDING] * 5000,
                                          "warnings": ["w"] * 5000}))  # fmt: skip
    text = _draw(record)
    words = " ".join(text.split())  # the table's caption wraps
    assert "... and 4960 more findings with less upside (all are in the JSON)" in words
    assert "... and 4980 more warnings (all are in the JSON)" in words
    assert len(text.splitlines()) < 200


scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=8)
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner,
                                                                                          max_size=3), max_leaves=10)  # fmt: skip
_SECTIONS = {  # what render_record reads, with keys it reads inside
    "summary": ["num_steps", "step_s", "step_s_p10", "samples_per_s", "data_wait_fraction", "forward_fraction"],
    "exit": ["status", "reason", "message"],
    "system": ["summary"], "memory": ["breakdown"], "compile": ["graph_count", "recompiles"],
    "trace": ["caveats", "warnings"], "artifacts": ["traces"],
}  # fmt: skip
_FINDING_KEYS = ["id", "layer", "severity", "title", "upside", "evidence", "explanation", "fix", "knob", "confidence",
                 "caveats"]
#: Findings of the right shape with any strings and numbers (an unknown severity, a negative upside).
typed_findings = st.fixed_dictionaries(
    {"id": st.text(max_size=8), "layer": st.text(max_size=8), "severity": st.sampled_from(["info", "problem"]) | st.text(max_size=8),
     "title": st.text(max_size=8), "upside": st.integers(-2**63, 2**63 - 1) | st.floats(allow_nan=False, allow_infinity=False),
     "evidence": st.dictionaries(st.text(max_size=5), values, max_size=3), "explanation": st.text(max_size=8),
     "fix": st.fixed_dictionaries({"text": st.text(max_size=8)}, optional={"code": st.text(max_size=8)})},
    optional={"knob": st.none() | st.text(max_size=8), "confidence": st.none() | st.text(max_size=8),
              "caveats": st.none() | st.lists(st.text(max_size=5), max_size=2)})  # fmt: skip


@st.composite
def records(draw: st.DrawFn) -> dict:
    data: dict = {"schema_version": 1}
    for name, keys in _SECTIONS.items():
        if draw(st.booleans()):
            data[name] = draw(st.fixed_dictionaries({}, optional={k: values for k in keys}) | values)
    for name, strategy in (("script", scalars), ("argv", st.lists(st.text(max_size=5)) | values),
                           ("warnings", st.lists(st.text(max_size=5)) | values), ("kind", st.sampled_from(["script", "traces"])),
                           ("findings", st.lists(typed_findings | st.fixed_dictionaries({}, optional={k: values for k in _FINDING_KEYS}),
                                                 max_size=4) | values)):  # fmt: skip
        if draw(st.booleans()):
            data[name] = draw(strategy)
    return data


@FUZZ
@given(data=records())
def test_any_record_json_loads_or_is_refused_and_what_loads_draws(data):
    try:
        record = Record.from_json(json.dumps(data))
    except RecordFormatError:
        return
    _draw(record)


@FUZZ
@given(text=st.binary(max_size=200) | st.text(max_size=200).map(str.encode))
def test_any_bytes_load_or_are_refused(text):
    try:
        Record.from_json(text)
    except RecordFormatError:
        pass


def test_an_env_and_a_system_of_the_wrong_types_are_diagnosed_tuned_and_drawn():
    """A hand-edited env (a string where an object belongs) and system summary: every rule that reads
    them is skipped naming the field, the knobs read nothing from them, and both reports draw."""
    from torchdoctor.knobs import REGISTRY
    from torchdoctor.report.html import HtmlRenderer
    from torchdoctor.rules import diagnose

    steps = [{"index": i, "wall_s": 0.1, "data_wait_s": 0.06, "forward_s": 0.02} for i in range(8)]
    record = Record.from_json(json.dumps({
        "schema_version": 2, "steps": steps, "summary": {"num_steps": 8, "step_s": 0.1, "window_s": 0.8,
                                                         "data_wait_fraction": 0.6, "forward_fraction": 0.2},
        "env": {"cpu": "many", "dataloaders": [{"num_workers": "0"}]},
        "system": {"summary": {"process_cpu_percent_mean": "idle"}}}))  # fmt: skip
    skipped = diagnose(record).skipped
    assert any("readable env section (Record field 'env.cpu' should be an object or null" in s for s in skipped)
    assert not any("unexpected layout" in s for s in skipped)
    applying = [name for name, knob in REGISTRY.items() if knob.applies(record)]
    assert applying == ["inference_mode"]  # from the steps alone: no backward ran
    assert "median step" in _draw(record) and "<html" in HtmlRenderer().render(record)
