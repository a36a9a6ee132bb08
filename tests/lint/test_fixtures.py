"""Each check is specified by its fixtures: `fixtures/<CODE>[_case].py` with the expected
`<CODE>[_case].txt` (`line:col CODE message`), and `<CODE>.in.py` -> `<CODE>.out.py` per autofix."""

from __future__ import annotations

from pathlib import Path

import pytest

from torchdoctor.lint import lint_paths
from torchdoctor.lint.engine import fix_source
from torchdoctor.lint.selection import Selection

FIXTURES = Path(__file__).parent / "fixtures"
CHECKERS = sorted(p for p in FIXTURES.glob("TDL*.py") if not p.name.endswith((".in.py", ".out.py")))
CODEMODS = sorted(FIXTURES.glob("TDL*.in.py"))


def code_of(path: Path) -> str:
    return path.name.split(".")[0].split("_")[0]


@pytest.mark.parametrize("fixture", CHECKERS, ids=lambda p: p.stem)
def test_check_flags_exactly_the_expected_lines(fixture: Path) -> None:
    report = lint_paths([fixture], select=[code_of(fixture)])
    found = [f"{v.line}:{v.col} {v.code} {v.message}" for v in report.violations]
    expected = fixture.with_suffix(".txt").read_text().splitlines()
    assert found == expected


@pytest.mark.parametrize("fixture", CODEMODS, ids=lambda p: p.name.split(".")[0])
def test_autofix_rewrites_the_input_into_the_expected_output(fixture: Path) -> None:
    expected = fixture.with_name(fixture.name.replace(".in.py", ".out.py")).read_text()
    fixed = fix_source(fixture.read_text(), Selection(select=(code_of(fixture),)))
    assert fixed == expected


@pytest.mark.parametrize("fixture", CODEMODS, ids=lambda p: p.name.split(".")[0])
def test_autofix_output_is_clean_of_the_fixed_pattern(fixture: Path) -> None:
    out = fixture.with_name(fixture.name.replace(".in.py", ".out.py"))
    report = lint_paths([out], select=[code_of(fixture)])
    assert not [v for v in report.violations if v.fixable]
