"""A knob holds its value against the script.

While a knob is applied, the script's calls that would undo it (`torch.set_num_threads`,
`set_float32_matmul_precision`, `torch.backends.*` switches, `set_detect_anomaly`,
`OMP_NUM_THREADS` set in `os.environ`, constructor arguments such as `DataLoader(num_workers=0)`)
are held off (ignored, or the argument rewritten) and recorded with the script's file and line,
so that the report and the diff can say which line of the script to change or delete.

Records (`intercepted_calls()`, one per knob and call site, in the order first seen):
`knob`, `call` (what the script called, e.g. "torch.set_num_threads(16)"), `file`, `line`,
`code` (the source line), `count` (calls from that line), `action` ("ignored": the call did
nothing; "rewritten": the constructor ran with the knob's arguments), and for constructors
`given` (arguments the script passed itself) and `changed` (argument -> [script's, knob's]).
"""

from __future__ import annotations

import linecache
import os
import sys
import sysconfig
from pathlib import Path
from typing import Any, Callable

import torch

from torchdoctor.knobs.base import Undo
from torchdoctor.knobs.patching import patch_attr, plain_value

_RECORDS: dict[tuple[str, str, int], dict[str, Any]] = {}

_TORCH_DIR = str(Path(torch.__file__).resolve().parent)
_PACKAGE_DIR = str(Path(__file__).resolve().parents[1])
_ZOO_DIR = str(Path(_PACKAGE_DIR) / "zoo")
_STDLIB_DIRS = tuple({str(Path(p).resolve()) for p in (sysconfig.get_paths()["stdlib"], os.path.dirname(os.__file__))})


def _is_library(filename: str) -> bool:
    if filename.startswith("<"):
        return True
    path = str(Path(filename).resolve()) if not filename.startswith("/") else filename
    if path.startswith(_ZOO_DIR):  # the zoo's workloads are scripts like any user's
        return False
    return path.startswith((_TORCH_DIR, _PACKAGE_DIR, *_STDLIB_DIRS)) or "site-packages" in path


def script_site() -> tuple[str, int] | None:
    """File and line of the innermost caller outside torch, torchdoctor and the standard library."""
    frame = sys._getframe(1)
    while frame is not None:
        if not _is_library(frame.f_code.co_filename):
            return str(Path(frame.f_code.co_filename).resolve()), frame.f_lineno
        frame = frame.f_back
    return None


def note(knob: str, call: str, *, action: str = "ignored", **details: Any) -> None:
    """Record that the script's call `call` was held off for `knob` (once per call site)."""
    site = script_site()
    if site is None:
        return
    file, line = site
    key = (knob, file, line)
    if key in _RECORDS:
        _RECORDS[key]["count"] += 1
        return
    _RECORDS[key] = {"knob": knob, "call": call, "file": file, "line": line,
                     "code": linecache.getline(file, line).strip(), "count": 1, "action": action, **details}


def intercepted_calls() -> list[dict[str, Any]]:
    return [dict(r) for r in _RECORDS.values()]


def reset() -> None:
    _RECORDS.clear()


def forget(knob: str) -> None:
    """Drop `knob`'s records: calls held off by a probe of torchdoctor's own (observe/probes/
    anomaly.py) for a few steps, which the run's Record must not show as a knob's interceptions."""
    for key in [key for key in _RECORDS if key[0] == knob]:
        del _RECORDS[key]


def rewritten(knob: str) -> Callable[[type, list[str], dict[str, list[Any]]], None]:
    """The `on_rewrite` of `patching.intercept_init` for `knob`: records each constructor call the
    knob rewrote, with `given` (the changed arguments the script passed itself) and `changed`."""

    def on_rewrite(cls: type, given: list[str], changed: dict[str, list[Any]]) -> None:
        note(knob, f"{cls.__name__}(...)", action="rewritten", callee=cls.__name__, given=given, changed=changed)

    return on_rewrite


def hold_call(owner: Any, name: str, knob: str, undoes: Callable[..., bool], label: str) -> Undo:
    """Replace `owner.name` by a function that ignores (and records) the calls for which
    `undoes(*args, **kwargs)` is true, and passes the others through."""
    original = getattr(owner, name)

    def held(*args: Any, **kwargs: Any) -> Any:
        if undoes(*args, **kwargs):
            shown = ", ".join([repr(a) for a in args] + [f"{k}={v!r}" for k, v in kwargs.items()])
            note(knob, f"{label}({shown})", args=[plain_value(a) for a in args])
            return None
        return original(*args, **kwargs)

    held.__wrapped__ = original  # type: ignore[attr-defined]
    return patch_attr(owner, name, held)


def hold_property(cls: type, name: str, knob: str, keep: Any, label: str) -> Undo:
    """Make assignments of anything but `keep` to the class property `cls.name` no-ops (recorded)."""
    original = cls.__dict__[name]

    def get(self: Any) -> Any:
        return original.__get__(self, cls)

    def set_(self: Any, value: Any) -> None:
        if value != keep:
            note(knob, f"{label} = {value!r}", value=plain_value(value))
            return
        original.__set__(self, value)

    return patch_attr(cls, name, property(get, set_))


def hold_setattr(cls: type, names: dict[str, Any], knob: str, label: str) -> Undo:
    """Make `obj.NAME = value` on instances of `cls` a recorded no-op when NAME is one of `names`
    and value differs from what the knob keeps there."""
    original = cls.__setattr__

    def setattr_(self: Any, attribute: str, value: Any) -> None:
        if attribute in names and value != names[attribute]:
            note(knob, f"{label}.{attribute} = {value!r}", value=plain_value(value))
            return
        original(self, attribute, value)

    return patch_attr(cls, "__setattr__", setattr_)


def hold_environ(values: dict[str, str], knob: str) -> Undo:
    """Keep these environment variables at their values: `os.environ[NAME] = other` is recorded
    and ignored."""
    environ_cls = type(os.environ)
    original = environ_cls.__setitem__

    def setitem(self: Any, key: str, value: str) -> None:
        if self is os.environ and key in values and value != values[key]:
            note(knob, f"os.environ[{key!r}] = {value!r}", value=value, variable=key)
            return
        original(self, key, value)

    return patch_attr(environ_cls, "__setitem__", setitem)
