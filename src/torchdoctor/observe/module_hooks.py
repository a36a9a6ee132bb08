"""The hooks the script registered on its modules, read off the outermost modules at the end of
the run: which function, on which kind of hook, on how many modules.

A forward hook runs at every call of its module, so a debugging check registered on every module
(a NaN check, an activation logger) runs dozens of times a forward. The hooks' functions are named
here so that the rules can find their calls' cost in the profiled step (the operator-costs probe's
`script_calls` names calls by the script function that made them). Only the script's own hooks are
listed: those whose code is not in torch, torchdoctor or an installed package (hooks that DDP,
FSDP, parametrizations or a library register are part of how those work).
"""

from __future__ import annotations

import os
import sysconfig
from collections import Counter
from pathlib import Path
from typing import Any, Callable

import torch

#: A module's hook dictionaries, by the kind of hook each holds.
HOOK_KINDS = (("forward_pre", "_forward_pre_hooks"), ("forward", "_forward_hooks"),
              ("backward_pre", "_backward_pre_hooks"), ("backward", "_backward_hooks"))
MAX_HOOKS = 8
#: Where code that is not the script's lives: installed packages, torch, and torchdoctor itself
#: (its own hooks, wherever it is installed from).
_INSTALLED = tuple({sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"],
                    os.path.dirname(torch.__path__[0]), str(Path(__file__).resolve().parents[1])})


def _code_of(hook: Callable[..., Any]) -> Any:
    """The code object a hook runs (a function, a bound method, a functools.partial of one, an
    object's `__call__`)."""
    target = getattr(hook, "func", hook)
    target = getattr(target, "__func__", target)
    code = getattr(target, "__code__", None)
    return code if code is not None else getattr(getattr(type(target), "__call__", None), "__code__", None)


def _scripts(code: Any) -> bool:
    """Code written by the script's author: not torch's, torchdoctor's or an installed package's."""
    filename = os.path.abspath(code.co_filename)
    return not filename.startswith(_INSTALLED) and not code.co_filename.startswith("<")


def script_hooks(module: torch.nn.Module) -> list[dict[str, Any]]:
    """The script's hooks on `module` and its submodules, most registered first: `function` (the
    hook's name), `file` and `line` (where it is defined), `kind` (forward_pre, forward,
    backward_pre, backward) and `modules` (how many modules it is registered on)."""
    found: Counter[tuple[str, str, int, str]] = Counter()
    for sub in module.modules():
        for kind, attribute in HOOK_KINDS:
            for hook in getattr(sub, attribute, {}).values():
                code = _code_of(hook)
                if code is not None and _scripts(code):
                    found[(code.co_name, os.path.basename(code.co_filename), code.co_firstlineno, kind)] += 1
    return [{"function": name, "file": file, "line": line, "kind": kind, "modules": count}
            for (name, file, line, kind), count in found.most_common(MAX_HOOKS)]
