"""A valid Record's JSON, damaged (a value of another type, a key dropped, a huge number), either
loads and draws, on the console and as HTML, or is refused with a RecordFormatError naming the
field: never an exception from a renderer."""

from __future__ import annotations

import copy
import json
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from rich.console import Console

from tests.fuzzing import fuzz_settings
from torchdoctor.distributed.section import DistributedSection
from torchdoctor.errors import RecordFormatError
from torchdoctor.analyse.sections import check_sections
from torchdoctor.compile.report import CompileReport
from torchdoctor.record import Record
from torchdoctor.report.console import render_record
from torchdoctor.report.html import HtmlRenderer
from torchdoctor.trace.summary.trace_summary import TraceSummary

#: A trace analysis of a real GPU trace, a compile section, per-rank figures of two ranks, findings.
VALID = json.loads((Path(__file__).parents[1] / "fixtures" / "records" / "trace-compile-distributed.json").read_text())
REPLACEMENTS = [None, True, False, 0, -1, 5, 1e308, -1e308, 5e-324, -5e-324, 2**70, -(2**63), "", "[/x]\x1b[2J", [], [1], [{}], {}, {"a": 1}]


def _paths(value: Any, path: tuple = ()) -> list[tuple]:
    """Every place in the JSON: the keys and indices that lead to it."""
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    return [path, *(p for key, item in items for p in _paths(item, (*path, key)))]


PATHS = [p for p in _paths(VALID) if p]


def _mutated(data: dict, path: tuple, replacement: Any, drop: bool) -> dict:
    out = copy.deepcopy(data)
    parent = out
    for key in path[:-1]:
        parent = parent[key]
    if drop and isinstance(parent, dict):
        del parent[path[-1]]
    else:
        parent[path[-1]] = replacement
    return out


def _draw(record: Record) -> None:
    render_record(record, Console(file=StringIO(), width=100, color_system=None))
    HtmlRenderer().render(record)


def test_the_valid_record_has_every_section_the_renderers_read():
    record = Record.from_json(json.dumps(VALID))
    assert TraceSummary.from_dict(record.trace).ranks and DistributedSection.from_dict(record.distributed).per_rank
    assert CompileReport.from_dict(record.compile) is not None and record.findings and record.steps
    _draw(record)


@pytest.mark.parametrize(("path", "value"), [
    (("trace", "ranks"), [1]), (("trace", "ranks", 0, "breakdown_us"), []),
    (("distributed", "per_rank"), [{}]), (("artifacts", "traces"), 5),
    (("summary", "data_wait_fraction"), 1e308), (("summary", "step_s"), 1e308),
])  # fmt: skip
def test_the_damage_seen_in_the_field_loads_and_draws_or_is_refused_by_name(path, value):
    _loads_and_draws_or_is_refused(_mutated(VALID, path, value, drop=False))


def test_an_operator_without_its_count_loads_and_draws_or_is_refused_by_name():
    _loads_and_draws_or_is_refused(_mutated(VALID, ("trace", "ranks", 0, "host", "top_by_self_time", 0, "count"),
                                            None, drop=True))


def _loads_and_draws_or_is_refused(data: dict) -> None:
    try:  # as `report` and `runs show` load it
        record = check_sections(Record.from_json(json.dumps(data)))
    except RecordFormatError as error:
        assert str(error).startswith(("Record ", "not a torchdoctor Record")), error
        return
    _draw(record)


@fuzz_settings(30)
@given(damage=st.lists(st.tuples(st.sampled_from(PATHS), st.sampled_from(REPLACEMENTS), st.booleans()),
                       min_size=1, max_size=3))
def test_any_damaged_record_loads_and_draws_or_is_refused_by_name(damage):
    data = VALID
    for path, replacement, drop in damage:
        try:
            data = _mutated(data, path, replacement, drop)
        except (KeyError, IndexError, TypeError):  # an earlier damage removed the place
            continue
    _loads_and_draws_or_is_refused(data)
