"""A check runs on a file only when the file holds the text its pattern needs; the text test is
a bound, so a pattern spelled through an alias is still found."""

from __future__ import annotations

from pathlib import Path

from torchdoctor.lint import lint_paths
from torchdoctor.lint.base import LintVisitor
from tests.lint.files import write


class _Needs(LintVisitor):
    TRIGGERS = (("DataLoader",), ("item", "cpu"))


def test_every_group_of_triggers_must_occur_in_the_source() -> None:
    assert _Needs.may_apply("DataLoader ... x.item()")
    assert not _Needs.may_apply("DataLoader only")
    assert not _Needs.may_apply("x.cpu() only")


def test_a_visitor_without_triggers_always_runs() -> None:
    assert LintVisitor.may_apply("")


def test_an_aliased_dataloader_is_still_found(tmp_path: Path) -> None:
    write(tmp_path, "train.py", "import torch.utils.data as tud\nloader = tud.DataLoader(ds)\n")
    write(tmp_path, "alias.py", "from torch.utils.data import DataLoader as DL\nloader = DL(ds)\n")
    found = sorted((Path(v.path).name, v.line) for v in lint_paths([tmp_path], select=["TDL101"]).violations)
    assert found == [("alias.py", 2), ("train.py", 2)]
