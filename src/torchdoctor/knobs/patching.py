"""Run-time patches the knobs share: replacing an attribute, intercepting a constructor's
arguments, and acting on the outermost module at its first forward. Each returns its undo."""

from __future__ import annotations

import inspect
import os
from typing import Any, Callable

import torch

from torchdoctor.knobs.base import Undo


def patch_attr(owner: Any, name: str, replacement: Any) -> Undo:
    """Set `owner.name`; the undo restores what `owner` itself held (or removes the attribute)."""
    had_own = name in getattr(owner, "__dict__", {})
    original = owner.__dict__[name] if had_own else None
    setattr(owner, name, replacement)

    def undo() -> None:
        if had_own:
            setattr(owner, name, original)
        else:
            delattr(owner, name)

    return undo


def chain(undos: list[Undo]) -> Undo:
    """One undo that runs `undos` last first."""

    def undo() -> None:
        for step in reversed(undos):
            step()

    return undo


#: Told by `intercept_init` of a call whose arguments the rewrite changed: the class, the changed
#: arguments the script gave itself, and argument -> [the script's value, the rewritten one].
OnRewrite = Callable[[type, list[str], dict[str, list[Any]]], None]


def intercept_init(cls: type, rewrite: Callable[[dict[str, Any]], None], *,
                   on_rewrite: OnRewrite | None = None) -> Undo:
    """Wrap `cls.__init__` so `rewrite` can change its bound arguments (a name -> value dict,
    every parameter given by the caller or defaulted) before the original runs. Each call whose
    arguments the rewrite changed is passed to `on_rewrite` (`torchdoctor.knobs.guard.rewritten`
    records it with the script's file and line). A callback, not an import of the guard: the guard
    builds on these patches."""
    original = cls.__init__
    signature = inspect.signature(original)

    def init(self: Any, *args: Any, **kwargs: Any) -> None:
        bound = signature.bind(self, *args, **kwargs)
        given = set(bound.arguments) - {"self"}
        bound.apply_defaults()
        arguments = dict(bound.arguments)
        extra = arguments.pop(_var_keyword(signature), {}) if _var_keyword(signature) else {}
        before = dict(arguments)
        rewrite(arguments)
        if on_rewrite is not None:
            changed = {k: [plain_value(before.get(k)), plain_value(v)] for k, v in arguments.items()
                       if k != "self" and not _same(before.get(k), v)}
            if changed:
                on_rewrite(cls, sorted(given & set(changed)), changed)
        arguments.pop("self")
        original(self, **arguments, **extra)

    init.__wrapped__ = original  # type: ignore[attr-defined]
    return patch_attr(cls, "__init__", init)


def plain_value(value: Any) -> Any:
    """`value` as JSON can hold it: a scalar as is, anything else as its repr."""
    return value if isinstance(value, (bool, int, float, str, type(None))) else repr(value)


def _same(a: Any, b: Any) -> bool:
    if a is b:
        return True
    simple = (bool, int, float, str, type(None))
    return isinstance(a, simple) and isinstance(b, simple) and type(a) is type(b) and a == b


def _var_keyword(signature: inspect.Signature) -> str | None:
    for parameter in signature.parameters.values():
        if parameter.kind is inspect.Parameter.VAR_KEYWORD:
            return parameter.name
    return None


def at_first_root_forward(action: Callable[[torch.nn.Module], Undo | None]) -> Undo:
    """Call `action(module)` once, on the first module called that has parameters (the model,
    not a parameter-free transform; the first one called is the outermost), in this process only.

    The call that triggers it has already looked up `forward`, so a forward replaced by `action`
    takes effect from the next call (a warm-up step). The global hook removes itself once it
    fired (torch iterates over a copy of the hooks), so later forwards pay nothing. The undo
    removes the hook if it never fired and undoes what `action` returned.
    """
    pid = os.getpid()
    undos: list[Undo] = []

    def pre(module: torch.nn.Module, args: Any) -> None:
        if undos or os.getpid() != pid or next(module.parameters(), None) is None:
            return
        handle.remove()
        undos.append(action(module) or (lambda: None))

    handle = torch.nn.modules.module.register_module_forward_pre_hook(pre)

    def undo_all() -> None:
        handle.remove()
        while undos:
            undos.pop()()

    return undo_all


def wrap_forward(module: torch.nn.Module, wrapper: Callable[[Callable[..., Any]], Callable[..., Any]]) -> Undo:
    """Replace the instance's forward by `wrapper(current forward)`; wrappers stack in call order."""
    return patch_attr(module, "forward", wrapper(module.forward))
