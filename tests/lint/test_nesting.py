"""One long generated expression is skipped with a note, before the parser could recurse on it;
the other files are linted, and everything up to the bound is parsed."""

from __future__ import annotations

from pathlib import Path

import pytest

from torchdoctor.lint import lint_paths, plan_fixes
from torchdoctor.lint.engine import lint_source
from torchdoctor.lint.nesting import MAX_NESTING, nesting_depth
from torchdoctor.lint.selection import Selection

FIXABLE = "import torch\nx = torch.zeros(3).cuda()\n"
N = MAX_NESTING - 2
#: Expressions as deep as the bound allows, one of each way to nest.
AT_THE_BOUND = {
    "sum": "x = " + " + ".join(["a"] * N), "list": "x = " + "[" * N + "]" * N,
    "attribute": "x = a" + ".b" * N, "calls": "x = f" + "(1)" * N, "subscripts": "x = a" + "[0]" * N,
    "lambdas": "x = " + "lambda: " * N + "1", "not": "x = " + "not " * N + "a",
    "ternary": "x = " + "a if c else " * N + "b", "dict": "x = " + "{1: " * N + "1" + "}" * N,
    "blocks": "".join("    " * i + "if a:\n" for i in range(N)) + "    " * N + "pass",
}  # fmt: skip


def _generated(folder: Path, name: str, terms: int) -> Path:
    path = folder / name
    path.write_text("x = " + " + ".join(["1"] * terms) + "\n")
    return path


def test_a_generated_one_expression_file_is_skipped_with_a_note_and_the_others_are_linted(tmp_path):
    deep = _generated(tmp_path, "generated.py", 2500)  # 10 KB
    deeper = _generated(tmp_path, "generated_more.py", 5000)  # 20 KB
    (tmp_path / "train.py").write_text(FIXABLE)
    result = lint_paths([tmp_path])
    assert [v.code for v in result.violations] == ["TDL202"] and result.files_checked == 1
    assert {s.path: s.reason for s in result.skipped} == {
        str(deep): "too deeply nested to parse (an expression nests 2500 levels, at most 100 are read); skipped",
        str(deeper): "too deeply nested to parse (an expression nests 5000 levels, at most 100 are read); skipped"}
    assert [f.path.name for f in plan_fixes([tmp_path])] == ["train.py"]


def test_lint_prints_the_note_with_no_traceback(tmp_path, capsys, monkeypatch):
    import sys

    from torchdoctor.cli import main

    _generated(tmp_path, "generated.py", 2500)
    monkeypatch.setattr(sys, "argv", ["torchdoctor", "lint", str(tmp_path)])
    monkeypatch.setenv("COLUMNS", "250")
    with pytest.raises(SystemExit) as end:
        main()
    out = capsys.readouterr()
    assert end.value.code == 0 and "Traceback" not in out.err
    assert "generated.py: too deeply nested to parse" in out.err


@pytest.mark.parametrize("name", sorted(AT_THE_BOUND))
def test_an_expression_as_deep_as_the_bound_is_measured_within_it_and_parsed(name):
    source = AT_THE_BOUND[name] + "\n"
    assert nesting_depth(source) <= MAX_NESTING
    result = lint_source(source, f"{name}.py", Selection())
    assert (result.error, result.skipped) == (None, None)


def test_a_file_the_tokenizer_rejects_is_left_to_the_parser_to_report(tmp_path):
    assert nesting_depth("x = (1,\n") == 0
    assert lint_source("x = (1,\n", "broken.py", Selection()).error is not None
