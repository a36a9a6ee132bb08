"""The registry: every check is found by module scan, has a stable unique code in its layer's
family, fixtures, and a section in docs/lint.md."""

from __future__ import annotations

import re
from pathlib import Path

from torchdoctor.lint import all_checks
from torchdoctor.lint.base import LAYERS
from torchdoctor.lint.registry import visitor_classes

FIXTURES = Path(__file__).parent / "fixtures"
DOCS = Path(__file__).resolve().parents[2] / "docs" / "lint.md"


def test_codes_are_unique_and_follow_the_family_policy() -> None:
    codes = [check.code for check in all_checks()]
    assert len(codes) == len(set(codes))
    for check in all_checks():
        assert re.fullmatch(r"TDL[1-5]\d\d", check.code)
        assert check.layer == LAYERS[check.code[3]]
        assert check.rule_hint.startswith(f"{check.layer}.")


def test_every_check_module_is_found_by_the_scan() -> None:
    modules = {cls.__module__.rsplit(".", 1)[-1] for cls in visitor_classes()}
    on_disk = {p.stem for p in (Path(__file__).resolve().parents[2] / "src/torchdoctor/lint/checks").glob("*.py")}
    assert modules == on_disk - {"__init__"}


def test_every_check_has_a_checker_fixture_and_expected_output() -> None:
    for check in all_checks():
        assert (FIXTURES / f"{check.code}.py").is_file(), check.code
        assert (FIXTURES / f"{check.code}.txt").read_text().strip(), check.code


def test_every_autofix_input_has_an_expected_output() -> None:
    for source in FIXTURES.glob("*.in.py"):
        assert source.with_name(source.name.replace(".in.py", ".out.py")).is_file()


def test_every_check_is_documented() -> None:
    text = DOCS.read_text()
    for check in all_checks():
        assert re.search(rf"^### {check.code}\b", text, re.M), check.code
