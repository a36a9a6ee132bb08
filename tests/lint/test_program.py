"""Program: each linted file is an entry point; its program is what it imports, transitively; a
file's companions are the other modules of every program it belongs to."""

from __future__ import annotations

from pathlib import Path

import libcst as cst
import pytest

from torchdoctor.lint import program as program_module
from torchdoctor.lint.program import Program, ProgramView, project_root
from tests.lint.files import write



def mentions_marker(module: cst.Module) -> bool:
    return "MARKER" in module.code


def test_a_program_is_its_entry_and_the_local_modules_it_imports_transitively(tmp_path: Path) -> None:
    main = write(tmp_path, "main.py", "import os\nfrom utils import train\n")
    init = write(tmp_path, "utils/__init__.py", "from .train_utils import train\n")
    train_utils = write(tmp_path, "utils/train_utils.py", "import torch\n")
    write(tmp_path, "unused.py")
    assert Program.of([main], [main]).closure(main) == (main, init, train_utils)


def test_companions_are_what_a_file_imports_what_imports_it_and_what_those_import(tmp_path: Path) -> None:
    main = write(tmp_path, "main.py", "import data\nimport train_utils\n")
    data = write(tmp_path, "data.py")
    train_utils = write(tmp_path, "train_utils.py")
    program = Program.of([tmp_path], [main, data, train_utils])
    assert set(program.companions(data)) == {main, train_utils}
    assert set(program.companions(main)) == {data, train_utils}


def test_two_scripts_sharing_a_helper_are_two_programs(tmp_path: Path) -> None:
    train = write(tmp_path, "train.py", "import common\n")
    evaluate = write(tmp_path, "evaluate.py", "import common\n")
    common = write(tmp_path, "common.py")
    program = Program.of([tmp_path], [common, evaluate, train])
    assert program.companions(train) == (common,)
    assert set(program.companions(common)) == {train, evaluate}


def test_a_view_asks_the_companions_and_a_view_without_program_has_none(tmp_path: Path) -> None:
    main = write(tmp_path, "main.py", "import helpers\n")
    write(tmp_path, "helpers.py", "MARKER = 1\n")
    assert ProgramView(Program.of([main], [main]), main).any_companion(mentions_marker)
    assert not ProgramView().any_companion(mentions_marker)


def test_unreadable_and_unparsable_modules_are_part_of_the_program_without_imports(tmp_path: Path) -> None:
    main = write(tmp_path, "main.py", "import broken\nimport latin\nimport missing_module\n")
    broken = write(tmp_path, "broken.py", "def f(:\n    import MARKER\n")
    latin = tmp_path / "latin.py"
    latin.write_bytes(b"MARKER = '\xe9'\n")
    program = Program.of([main], [main])
    assert program.closure(main) == (main, broken, latin)
    assert not ProgramView(program, main).any_companion(mentions_marker)


def test_imports_are_followed_at_most_max_depth_deep(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(program_module, "MAX_DEPTH", 2)
    main = write(tmp_path, "main.py", "import a\n")
    a = write(tmp_path, "a.py", "import b\n")
    b = write(tmp_path, "b.py", "import c\n")
    write(tmp_path, "c.py")
    assert Program.of([main], [main]).closure(main) == (main, a, b)


def test_at_most_max_modules_files_are_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(program_module, "MAX_MODULES", 2)
    main = write(tmp_path, "main.py", "import a\n")
    a = write(tmp_path, "a.py", "import b\n")
    write(tmp_path, "b.py", "import c\n")
    assert Program.of([main], [main]).closure(main) == (main, a, tmp_path / "b.py")


def test_the_project_root_is_the_nearest_folder_with_a_project_marker(tmp_path: Path) -> None:
    write(tmp_path, "repo/pyproject.toml")
    (tmp_path / "repo/scripts/deep").mkdir(parents=True)
    (tmp_path / "loose").mkdir()
    assert project_root(tmp_path / "repo/scripts/deep") == tmp_path / "repo"
    assert project_root(tmp_path / "loose") == tmp_path / "loose"


def test_a_script_finds_the_projects_packages_at_its_root_and_in_src(tmp_path: Path) -> None:
    write(tmp_path, "repo/setup.cfg")
    script = write(tmp_path, "repo/scripts/train.py", "import tools\nfrom mypkg.data import loader\n")
    tools = write(tmp_path, "repo/tools.py")
    init = write(tmp_path, "repo/src/mypkg/__init__.py")
    data = write(tmp_path, "repo/src/mypkg/data.py")
    assert Program.of([script], [script]).closure(script) == (script, tools, init, data)


def test_nothing_outside_the_project_root_is_read(tmp_path: Path) -> None:
    write(tmp_path, "helpers.py", "MARKER = 1\n")
    script = write(tmp_path, "project/train.py", "import helpers\nfrom .. import helpers\n")
    program = Program.of([script], [script])
    assert program.closure(script) == (script,)
