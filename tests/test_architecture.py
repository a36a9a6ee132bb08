"""The import direction of docs/architecture.md holds: import-linter's contracts (pyproject.toml,
[tool.importlinter]) are kept by the package, and broken by a copy of it with one upward import."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import torchdoctor

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = Path(torchdoctor.__file__).parent


def _lint_imports(python_path: Path) -> subprocess.CompletedProcess[str]:
    lint = Path(sys.executable).with_name("lint-imports")
    return subprocess.run([str(lint), "--config", str(ROOT / "pyproject.toml"), "--no-cache"], cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(python_path)}, capture_output=True, text=True,
                          timeout=120)


def test_the_package_keeps_every_import_contract():
    proc = _lint_imports(PACKAGE.parent)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "0 broken" in proc.stdout


def test_an_analysis_that_imports_the_workflow_breaks_the_layers(tmp_path):
    copy = tmp_path / "src" / "torchdoctor"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    with (copy / "trace" / "__init__.py").open("a") as f:
        f.write("\nfrom torchdoctor.workflow import diagnose_traces  # an upward import\n")
    proc = _lint_imports(copy.parent)
    assert proc.returncode != 0
    assert "torchdoctor.trace -> torchdoctor.workflow" in proc.stdout, proc.stdout
