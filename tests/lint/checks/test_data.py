"""TDL102 over a program: whether the script uses CUDA is a fact of the process, so a DataLoader
built in one module is judged by every module of its program."""

from __future__ import annotations

from pathlib import Path

from torchdoctor.lint import lint_paths, lint_script_with_local_imports, plan_fixes
from tests.lint.files import write

LOADER = "from torch.utils.data import DataLoader\nloader = DataLoader(ds, num_workers=2, persistent_workers=True)\n"



def test_a_loader_in_a_module_of_a_cuda_script_is_flagged_in_its_own_file(tmp_path: Path) -> None:
    script = write(tmp_path, "train.py", "from data import loader\nfor x in loader:\n    x.cuda()\n")
    data = write(tmp_path, "data.py", LOADER)
    for report in (lint_paths([tmp_path], select=["TDL102"]), lint_script_with_local_imports(script)):
        assert [(v.code, v.path, v.line, v.fixable) for v in report.violations] == [("TDL102", str(data), 2, True)]


def test_the_fix_applies_to_the_module_that_builds_the_loader(tmp_path: Path) -> None:
    write(tmp_path, "train.py", "import data\ndevice = 'cuda'\n")
    data = write(tmp_path, "data.py", LOADER)
    (fix,) = plan_fixes([tmp_path], select=["TDL102"])
    assert fix.path == data and "pin_memory=True" in fix.after


def test_a_loader_in_a_program_that_never_uses_cuda_is_not_flagged(tmp_path: Path) -> None:
    write(tmp_path, "train.py", "from data import loader\n")
    write(tmp_path, "data.py", LOADER)
    write(tmp_path, "gpu_benchmark.py", "device = 'cuda'\n")
    assert lint_paths([tmp_path], select=["TDL102"]).violations == ()
