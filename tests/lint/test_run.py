"""lint_paths, lint_script_with_local_imports and plan_fixes on real files in a temp folder."""

from __future__ import annotations

from pathlib import Path

import pytest

from torchdoctor.errors import ScriptNotFoundError
from torchdoctor.lint import (
    SCHEMA_VERSION,
    LintUsageError,
    lint_paths,
    lint_script_with_local_imports,
    plan_fixes,
)
from tests.lint.files import write

DATALOADER_NO_WORKERS = "from torch.utils.data import DataLoader\nloader = DataLoader(ds)\n"



def test_a_file_with_a_syntax_error_is_reported_and_the_others_are_still_linted(tmp_path: Path) -> None:
    write(tmp_path, "a_broken.py", "def f(:\n    pass\n")
    write(tmp_path, "b_ok.py", DATALOADER_NO_WORKERS)
    report = lint_paths([tmp_path])
    assert [e.path for e in report.errors] == [str(tmp_path / "a_broken.py")]
    assert (report.errors[0].line, report.errors[0].col) == (1, 7)
    assert report.errors[0].reason == "syntax error: invalid syntax"
    assert [v.code for v in report.violations] == ["TDL101"]
    assert report.files_checked == 1


def test_non_python_files_are_skipped_with_a_note(tmp_path: Path) -> None:
    notes = write(tmp_path, "notes.txt", "loader = DataLoader(ds)\n")
    report = lint_paths([notes])
    assert report.violations == () and report.files_checked == 0
    assert report.skipped[0].path == str(notes) and "not a Python file" in report.skipped[0].reason


def test_undecodable_bytes_are_an_error_not_a_crash(tmp_path: Path) -> None:
    (tmp_path / "latin.py").write_bytes(b"x = '\xe9'\n")
    report = lint_paths([tmp_path])
    assert report.errors and "cannot read" in report.errors[0].reason


def test_a_missing_path_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(LintUsageError, match="no such file or directory"):
        lint_paths([tmp_path / "missing.py"])


def test_select_and_ignore_take_prefixes(tmp_path: Path) -> None:
    path = write(tmp_path, "s.py", DATALOADER_NO_WORKERS + "model = torch.nn.DataParallel(m)\nimport torch\n")
    assert {v.code for v in lint_paths([path]).violations} == {"TDL101", "TDL401"}
    assert {v.code for v in lint_paths([path], select=["TDL4"]).violations} == {"TDL401"}
    assert {v.code for v in lint_paths([path], ignore=["tdl1"]).violations} == {"TDL401"}


def test_an_unknown_code_prefix_is_a_usage_error_listing_valid_codes() -> None:
    with pytest.raises(LintUsageError, match="unknown lint code or prefix 'TDL9'.*TDL101"):
        lint_paths([], select=["TDL9"])


def test_hidden_and_cache_folders_are_not_searched(tmp_path: Path) -> None:
    write(tmp_path, ".venv/lib/x.py", DATALOADER_NO_WORKERS)
    write(tmp_path, "__pycache__/y.py", DATALOADER_NO_WORKERS)
    assert lint_paths([tmp_path]).files_checked == 0


def test_local_imports_are_linted_with_the_script_but_not_outside_its_folder(tmp_path: Path) -> None:
    project = tmp_path / "project"
    write(project, "data/__init__.py", "")
    write(project, "data/loaders.py", DATALOADER_NO_WORKERS)
    write(project, "models.py", "from .layers import x\n")
    write(project, "layers.py", "import torch\nm = torch.nn.DataParallel(net)\n")
    write(tmp_path, "outside.py", DATALOADER_NO_WORKERS)
    script = write(project, "train.py", "import sys\nimport models\nfrom data.loaders import loader\nimport outside\n")
    report = lint_script_with_local_imports(script)
    linted = {Path(v.path).name: v.code for v in report.violations}
    assert linted == {"loaders.py": "TDL101", "layers.py": "TDL401"}
    assert report.files_checked == 5  # train, models, layers, data/__init__, data/loaders


def test_linting_a_missing_script_names_it(tmp_path: Path) -> None:
    with pytest.raises(ScriptNotFoundError, match="missing.py"):
        lint_script_with_local_imports(tmp_path / "missing.py")


def test_the_report_dict_is_versioned_and_carries_every_violation_field(tmp_path: Path) -> None:
    path = write(tmp_path, "s.py", DATALOADER_NO_WORKERS)
    data = lint_paths([path]).to_dict()
    assert data["schema_version"] == SCHEMA_VERSION
    assert set(data) == {"schema_version", "files_checked", "violations", "errors", "skipped"}
    assert data["violations"][0] == {
        "code": "TDL101",
        "layer": "data",
        "message": data["violations"][0]["message"],
        "path": str(path),
        "line": 2,
        "col": 10,
        "fixable": False,
        "rule_hint": "data.num_workers",
    }


def test_planning_fixes_writes_nothing_and_writing_keeps_crlf_newlines(tmp_path: Path) -> None:
    path = tmp_path / "crlf.py"
    path.write_bytes(b"import torch\r\nx = torch.zeros(3).cuda()\r\n")
    (fix,) = plan_fixes([path])
    assert path.read_bytes() == b"import torch\r\nx = torch.zeros(3).cuda()\r\n"
    fix.write()
    assert path.read_bytes() == b'import torch\r\nx = torch.zeros(3, device="cuda")\r\n'
    assert "-x = torch.zeros(3).cuda()" in fix.diff()


def test_a_fix_suppressed_by_noqa_is_not_applied(tmp_path: Path) -> None:
    path = write(tmp_path, "n.py", "import torch\nx = torch.zeros(3).cuda()  # noqa: TDL202\n")
    assert plan_fixes([path]) == []
