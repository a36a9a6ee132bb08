"""Run a script file as `python SCRIPT ARGS` runs it: as `__main__`, with `sys.argv[0]` exactly
as the user typed it and `__file__` absolute (cwd joined, not resolved), like CPython >= 3.9, and
one frame from the top of the stack (`MainScript`).

Why not `runpy.run_path`: it sets `sys.argv[0]` to the path it was given, so the script saw an
absolute argv[0] under torchdoctor and the one typed under plain Python (a script that prints its
usage from argv[0], or compares it, behaved differently). Used by the observed child's bootstrap
and by `run --apply`; directories and zip files (`python app.zip`) still go through runpy.
"""

from __future__ import annotations

import builtins
import io
import os
import sys
import traceback
import types
from dataclasses import dataclass
from typing import Any


def script_file(typed: str) -> str:
    """The script's `__file__`: what CPython makes of the path typed (absolute, unresolved)."""
    return typed if os.path.isabs(typed) else os.path.join(os.getcwd(), typed)


class ScriptDoesNotCompile(Exception):
    """The script's source is not Python (a syntax error, a shell script named `.py`, a binary):
    `text` is what Python prints for it, `where` one line, "FILE:LINE: SyntaxError: message"."""

    def __init__(self, text: str, where: str) -> None:
        super().__init__(where)
        self.text = text
        self.where = where


def compile_script(source: bytes, path: str) -> types.CodeType:
    """The script's code object; raises ScriptDoesNotCompile with Python's own error."""
    try:
        return compile(source, path, "exec", dont_inherit=True)
    except (SyntaxError, ValueError) as exc:  # ValueError: null bytes, before Python 3.12
        raise ScriptDoesNotCompile("".join(traceback.format_exception_only(exc)), _where(exc, path)) from None


def _where(exc: SyntaxError | ValueError, path: str) -> str:
    """"FILE:LINE: SyntaxError: message" (FILE alone when Python names no line)."""
    if isinstance(exc, SyntaxError):
        where = f"{exc.filename or path}:{exc.lineno}" if exc.lineno else str(exc.filename or path)
        return f"{where}: {type(exc).__name__}: {exc.msg}"
    return f"{path}: {type(exc).__name__}: {exc}"


@dataclass
class MainScript:
    """A script made ready to run as `__main__` (`enter_main`): `exec(code, namespace)` runs it in
    the caller's frame. Launchers do that at the top level of a `python -c` program, so that the
    script's frames sit one above where `python SCRIPT` puts them: code that walks the stack pays
    as it does natively (autograd's anomaly mode formats it at every node; 7 frames of ours below
    the script made an anomaly-mode step 13% slower observed than plain, docs/field.md)."""

    code: types.CodeType
    namespace: dict[str, Any]
    saved_main: types.ModuleType | None  # the `__main__` module to put back, None when runpy runs it


def enter_main(typed: str, argv: list[str]) -> MainScript:
    """Make the file `typed` ready to run as `__main__` with `sys.argv = argv` (argv[0] as typed);
    `leave_main` undoes it. Exceptions of the script (SystemExit included) propagate from the exec
    as from the script itself; a file that is not Python raises ScriptDoesNotCompile here."""
    path = script_file(typed)
    sys.argv = list(argv)
    if not os.path.isfile(path) or not path.endswith((".py", ".pyw")) and _is_zip(path):
        code = compile("import runpy\nrunpy.run_path(path, run_name='__main__')", "<torchdoctor>", "exec")
        return MainScript(code, {"path": path}, None)
    with io.open_code(path) as handle:
        source = handle.read()
    code = compile_script(source, path)
    module = types.ModuleType("__main__")
    module.__dict__.update(__file__=path, __cached__=None, __loader__=None, __package__=None, __spec__=None,
                           __builtins__=builtins)
    saved = sys.modules.get("__main__")
    sys.modules["__main__"] = module
    return MainScript(code, module.__dict__, saved)


def leave_main(script: MainScript) -> None:
    """Put back the `__main__` module that `enter_main` replaced."""
    if script.saved_main is not None:
        sys.modules["__main__"] = script.saved_main


def _is_zip(path: str) -> bool:
    import zipfile

    return zipfile.is_zipfile(path)
