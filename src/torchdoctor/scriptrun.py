"""Run a script file as `python SCRIPT ARGS` runs it: as `__main__`, with `sys.argv[0]` exactly
as the user typed it and `__file__` absolute (cwd joined, not resolved), like CPython >= 3.9.

Why not `runpy.run_path`: it sets `sys.argv[0]` to the path it was given, so the script saw an
absolute argv[0] under torchdoctor and the one typed under plain Python (a script that prints its
usage from argv[0], or compares it, behaved differently). Used by the observed child's bootstrap
and by `run --apply`; directories and zip files (`python app.zip`) still go through runpy.
"""

from __future__ import annotations

import builtins
import io
import os
import runpy
import sys
import types
from typing import Any


def script_file(typed: str) -> str:
    """The script's `__file__`: what CPython makes of the path typed (absolute, unresolved)."""
    return typed if os.path.isabs(typed) else os.path.join(os.getcwd(), typed)


def run_as_main(typed: str, argv: list[str]) -> dict[str, Any]:
    """Execute the file `typed` as `__main__` with `sys.argv = argv` (argv[0] as typed); returns
    its globals. Exceptions (SystemExit included) propagate as from the script itself."""
    path = script_file(typed)
    sys.argv = list(argv)
    if not os.path.isfile(path) or not path.endswith((".py", ".pyw")) and _is_zip(path):
        runpy.run_path(path, run_name="__main__")
        return {}
    with io.open_code(path) as handle:
        source = handle.read()
    code = compile(source, path, "exec", dont_inherit=True)
    module = types.ModuleType("__main__")
    module.__dict__.update(__file__=path, __cached__=None, __loader__=None, __package__=None, __spec__=None,
                           __builtins__=builtins)
    saved = sys.modules.get("__main__")
    sys.modules["__main__"] = module
    try:
        exec(code, module.__dict__)
    finally:
        if saved is not None:
            sys.modules["__main__"] = saved
    return module.__dict__


def _is_zip(path: str) -> bool:
    import zipfile

    return zipfile.is_zipfile(path)
