"""`torchdoctor check --against-python PYTHON`: this interpreter (B) against another one (A) on the
same code, interleaved on this machine."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from typing import Any, Sequence

import orjson

from torchdoctor.check.config import CheckOptions
from torchdoctor.check.context import CheckContext, Collaborators
from torchdoctor.check.result import CheckResult
from torchdoctor.check.rounds import interleaved
from torchdoctor.check.runner import Runner
from torchdoctor.check.sides import Side, script_path
from torchdoctor.errors import CheckError


def compare_with_python(script: str, args: Sequence[str], python: str, options: CheckOptions,
                        collaborators: Collaborators) -> CheckResult:
    """Compare this interpreter (B) with PYTHON (A) on the same code, interleaved."""
    context = CheckContext("python", script, args, options, collaborators)

    def body(context: CheckContext) -> None:
        path = script_path(script)
        other = probe_python(python)
        cwd = os.getcwd()
        side_a = Side("A", f"{other['executable']} (torch {other['torch']})", path, cwd, python=other["executable"],
                      info={"torch": other["torch"], "python_version": other["python"]})
        side_b = Side("B", f"{sys.executable}", path, cwd, info={})
        interleaved(context, Runner.started(context, [side_a, side_b], args))

    return context.run(body)


def probe_python(python: str) -> dict[str, Any]:
    """The other interpreter's versions; CheckError when it cannot run torch and torchdoctor."""
    found = shutil.which(python) or python
    if not (os.path.isfile(found) and os.access(found, os.X_OK)):
        raise CheckError(f"--against-python {python}: not an executable interpreter", kind="bad_python", side="A")
    code = ("import json, sys, torch, torchdoctor.launch.forkserver; "
            "print(json.dumps({'executable': sys.executable, 'python': sys.version.split()[0], "
            "'torch': torch.__version__}))")
    try:
        proc = subprocess.run([found, "-c", code], capture_output=True, text=True, timeout=300)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise CheckError(f"--against-python {python} cannot run: {exc}", kind="bad_python", side="A") from None
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise CheckError(f"--against-python {python} cannot import torch and torchdoctor ({last}); install "
                         "torchdoctor in that environment", kind="bad_python", side="A", detail=proc.stderr[-4000:])
    info = orjson.loads(proc.stdout.strip().splitlines()[-1])
    info["executable"] = found  # keep the path given (a venv's python is often a link to the same binary)
    return info
