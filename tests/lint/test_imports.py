"""import_targets and resolve: which of the project's files an import statement loads."""

from __future__ import annotations

from pathlib import Path

import ast

from torchdoctor.lint.imports import ImportTarget, import_targets, resolve
from tests.lint.files import write



def loaded(source: str, here: Path, roots: list[Path], boundary: Path) -> set[Path]:
    targets = import_targets(ast.parse(source), here)
    return {f for t in targets for f in resolve(t, roots, [boundary])}


def test_a_dotted_import_loads_every_package_on_the_way_then_the_module(tmp_path: Path) -> None:
    init = write(tmp_path, "utils/__init__.py")
    module = write(tmp_path, "utils/train_utils.py")
    assert loaded("import utils.train_utils\n", tmp_path, [tmp_path], tmp_path) == {init, module}


def test_from_a_package_import_names_loads_the_package_and_the_names_that_are_submodules(tmp_path: Path) -> None:
    init = write(tmp_path, "utils/__init__.py")
    environment = write(tmp_path, "utils/environment.py")
    source = "from utils import (environment, setup,\n    train)\n"
    assert loaded(source, tmp_path, [tmp_path], tmp_path) == {init, environment}


def test_relative_imports_resolve_from_the_importing_files_folder(tmp_path: Path) -> None:
    here = tmp_path / "pkg" / "sub"
    sibling = write(here, "train_utils.py")
    parent_module = write(tmp_path, "pkg/config.py")
    source = "from .train_utils import train\nfrom .. import config\n"
    assert loaded(source, here, [tmp_path / "elsewhere"], tmp_path) == {sibling, parent_module}


def test_a_namespace_package_without_init_is_descended_into(tmp_path: Path) -> None:
    module = write(tmp_path, "src/data.py")
    assert loaded("from src.data import loaders\n", tmp_path, [tmp_path], tmp_path) == {module}


def test_imports_inside_functions_count(tmp_path: Path) -> None:
    module = write(tmp_path, "helpers.py")
    assert loaded("def main():\n    import helpers\n", tmp_path, [tmp_path], tmp_path) == {module}


def test_an_absolute_import_takes_the_first_root_that_holds_it_like_sys_path(tmp_path: Path) -> None:
    first = write(tmp_path, "scripts/utils.py")
    write(tmp_path, "utils.py")
    roots = [tmp_path / "scripts", tmp_path]
    assert loaded("import utils\n", tmp_path, roots, tmp_path) == {first}


def test_stdlib_third_party_and_missing_modules_resolve_to_nothing(tmp_path: Path) -> None:
    source = "import os\nimport torch.nn as nn\nfrom transformers import T5Tokenizer\nimport policies\n"
    assert loaded(source, tmp_path, [tmp_path], tmp_path) == set()


def test_files_outside_the_boundary_are_never_resolved(tmp_path: Path) -> None:
    write(tmp_path, "outside.py")
    project = tmp_path / "project"
    project.mkdir()
    assert loaded("import outside\nfrom .. import outside\n", project, [tmp_path], project) == set()


def test_a_star_import_loads_the_module_it_names(tmp_path: Path) -> None:
    module = write(tmp_path, "summarization_dataset.py")
    assert import_targets(ast.parse("from summarization_dataset import *\n"), tmp_path) == [
        ImportTarget("summarization_dataset")
    ]
    assert loaded("from summarization_dataset import *\n", tmp_path, [tmp_path], tmp_path) == {module}
