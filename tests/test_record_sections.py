"""Each typed section of a Record reads a saved section into its owner's value and writes back the
same JSON (keys, order, omissions) on Records of real runs; a hand-written rule fixture, which
leaves out what its rule does not read, comes back with every value it has. A section
of the wrong shape is a RecordFormatError naming the field."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Callable

import orjson
import pytest

from torchdoctor.compile.comparison import Comparison
from torchdoctor.compile.report import CompileReport
from torchdoctor.errors import RecordFormatError
from torchdoctor.lint import LintResult
from torchdoctor.memory.report import MemoryReport

TESTS = Path(__file__).parent
#: Records of real runs: the demo on an H200, and `torchdoctor compile --rounds 1` of
#: tests/compile/scripts/compiled_breaks.py on a CPU (its compiled run, with the comparison).
REAL = sorted([*TESTS.glob("rules/device_records/*.json"), TESTS / "fixtures/records/cpu-compile-breaks.json"])
#: Records written by torchdoctor itself: the real runs and the rules' fixtures.
RECORDS = [*REAL, *sorted(TESTS.glob("rules/fixtures/*/*.json"))]
SECTIONS: dict[str, Callable[[dict[str, Any]], Any]] = {
    "lint": LintResult.from_dict,
    "memory": MemoryReport.from_dict,
    "compile": CompileReport.from_dict,
}


def _sections() -> list[Any]:
    cases = []
    for path in RECORDS:
        data = orjson.loads(path.read_bytes())
        for name, read in SECTIONS.items():
            if isinstance(data.get(name), dict):
                real = "real/" if path in REAL else ""
                cases.append(pytest.param(read, data[name], id=f"{real}{path.parent.name}/{path.stem}:{name}"))
    return cases


def _kept(saved: Any, written: Any) -> bool:
    """`written` has every key of `saved` with the same value (recursively)."""
    if isinstance(saved, dict):
        return isinstance(written, dict) and all(k in written and _kept(v, written[k]) for k, v in saved.items())
    if isinstance(saved, list):
        return isinstance(written, list) and len(saved) == len(written) and all(map(_kept, saved, written))
    return saved == written and type(saved) is type(written)


@pytest.mark.parametrize("read, section", _sections())
def test_a_saved_section_reads_and_writes_back_its_json(read, section, request):
    written = read(section).to_dict()
    if request.node.callspec.id.startswith("real/"):
        assert orjson.dumps(written) == orjson.dumps(section)
    else:
        assert _kept(section, written)
        assert orjson.dumps(read(written).to_dict()) == orjson.dumps(written)


def test_every_section_has_a_real_record_to_round_trip():
    names = {case.id.rsplit(":", 1)[1] for case in _sections() if case.id.startswith("real/")}
    assert names == set(SECTIONS)


@pytest.mark.parametrize("read, section, field", [
    (LintResult.from_dict, {"violations": "x"}, "lint.violations"),
    (LintResult.from_dict, {"violations": [{"path": "t.py", "line": "3", "col": 1}]}, "lint.violations[0].line"),
    (LintResult.from_dict, {"violations": [{"line": 3, "col": 1}]}, "lint.violations[0].path"),
    (MemoryReport.from_dict, {"breakdown": []}, "memory.breakdown"),
    (MemoryReport.from_dict, {"breakdown": {"method": "rss", "device": "cpu"}}, "memory.breakdown.peak_bytes"),
    (MemoryReport.from_dict, {"breakdown": {"method": "rss", "device": "cpu", "peak_bytes": 1,
                                            "modules": [{"name": "fc", "parameter_bytes": "1", "output_bytes": 1}]}},
     "memory.breakdown.modules[0].parameter_bytes"),
    (MemoryReport.from_dict, {"timeline": {"source": "mem_tracker", "device": "cpu", "t_s": ["0"]}},
     "memory.timeline.t_s[0]"),
    (CompileReport.from_dict, {"graph_breaks": {"filename": "t.py"}}, "compile.graph_breaks"),
    (CompileReport.from_dict, {"graph_breaks": [{"filename": "t.py", "lineno": "3", "reason": "x"}]},
     "compile.graph_breaks[0].lineno"),
    (CompileReport.from_dict, {"recompile_limit_hit": {"config": "recompile_limit"}}, "compile.recompile_limit_hit.limit"),
    (CompileReport.from_dict, {"comparison": {"verdict": {"verdict": "slower", "ratio": "1.2"}}},
     "compile.comparison.verdict.ratio"),
    (Comparison.from_dict, {"verdict": {"verdict": "faster"}, "operators": {"added": [{"name": "mm"}]}},
     "compile.comparison.operators.added[0].status"),
])
def test_a_section_of_the_wrong_shape_is_refused_naming_the_field(read, section, field):
    with pytest.raises(RecordFormatError, match=re.escape(f"'{field}'")):
        read(section)


def test_a_lint_section_without_the_fields_no_reader_needs_reads_with_their_defaults():
    lint = LintResult.from_dict({"violations": [{"path": "t.py", "line": 3, "col": 1}]})
    assert lint.files_checked == 0 and lint.violations[0].location == "t.py:3:1 " and not lint.violations[0].fixable
