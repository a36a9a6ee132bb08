"""Checked values from a Record's JSON: every field of a dataclass against its annotation.

A Record file may come from someone else. Its sections are read into dataclasses only through
:func:`checked_fields` (the fields found, each checked) or :func:`value_of` (the dataclass itself,
nested dataclasses built the same way), so a wrong type is a RecordFormatError naming the field
(`memory.breakdown.peak_bytes`), never a traceback later in a renderer or a rule.

:class:`Keyed` is the base of a value whose JSON keys vary: an empty or minimal analysis writes fewer
keys (a trace's `temporal: {}`), and a Record analysed before a figure existed lacks it. It remembers
the keys read, in their order, so `to_dict` writes back exactly what `from_dict` read.

A field whose JSON key is not a Python name (`class`) names its key in its metadata:
`class_name: str | None = field(default=None, metadata=json_key("class"))`.
"""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar, TypeVar

from torchdoctor.errors import RecordFormatError

T = TypeVar("T")


def json_key(key: str) -> dict[str, str]:
    """A field's metadata naming its JSON key, for a key that is not a Python name (`class`)."""
    return {"json": key}


def key_of(f: dataclasses.Field[Any]) -> str:
    """The JSON key of a dataclass field: its name unless its metadata names another (json_key)."""
    return f.metadata.get("json", f.name)


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    """The resolved annotations of a dataclass, once per class (resolving them is most of the cost
    of reading a small section)."""
    return typing.get_type_hints(cls)


def checked_fields(cls: type, data: Any, where: str) -> dict[str, Any]:
    """The fields of `cls` found in `data` (by their JSON keys, :func:`key_of`), each checked against
    its annotation, as they are (nested objects stay dicts), by field name. A field with a default
    may be missing; one without is a RecordFormatError. `where` names `data` in errors (`""` for the
    Record itself, whose fields are named bare)."""
    if not isinstance(data, dict):
        raise RecordFormatError(f"Record field {where!r} should be an object, not {kind(data)}")
    hints = _hints(cls)
    out = {}
    for f in dataclasses.fields(cls):
        key = key_of(f)
        name = f"{where}.{key}" if where else key
        if key not in data:
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                raise RecordFormatError(f"Record field {name!r} is missing")
            continue
        problem = _problem(data[key], hints[f.name], name)
        if problem:
            raise RecordFormatError(problem)
        out[f.name] = data[key]
    return out


def value_of(cls: type[T], data: Any, where: str) -> T:
    """`cls` built from a JSON object: its fields checked as :func:`checked_fields` checks them, and
    every field annotated with a dataclass (alone, optional, as the items of a list or tuple, or as
    the values of a dict) built the same way; a tuple field becomes a tuple. Keys `cls` does not know
    are ignored."""
    hints = _hints(cls)
    keys = {f.name: key_of(f) for f in dataclasses.fields(cls)}
    return cls(**{name: _built(value, hints[name], f"{where}.{keys[name]}")
                  for name, value in checked_fields(cls, data, where).items()})


def json_of(value: Any) -> dict[str, Any]:
    """A dataclass built by :func:`value_of` as the JSON it was read from: its fields in order, nested
    dataclasses as objects, tuples as lists."""
    return _json(dataclasses.asdict(value))


def _json(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _json(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json(item) for item in value]
    return value


def readable(read: Callable[[Any], T], section: Any) -> T | None:
    """`read(section)` for a renderer that shows a Record's section when it can: None for an absent
    section (None) and for one that does not fit its type (a hand-edited Record), which then
    renders as absent instead of stopping the report."""
    if section is None:
        return None
    try:
        return read(section)
    except RecordFormatError:
        return None


def _built(value: Any, hint: Any, where: str) -> Any:
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if value is None:
        return None
    if origin in (typing.Union, types.UnionType):
        fitting = [arg for arg in args if arg is not type(None) and _problem(value, arg, where) is None]
        return _built(value, fitting[0], where)
    if dataclasses.is_dataclass(hint):
        return value_of(hint, value, where)
    if origin in (list, tuple):
        return origin(_built(item, args[0], f"{where}[{i}]") for i, item in enumerate(value))
    if origin is dict and dataclasses.is_dataclass(args[1]):
        return {key: value_of(args[1], item, f"{where}.{key}") for key, item in value.items()}
    return value


def _problem(value: Any, hint: Any, name: str) -> str | None:
    """Why a JSON value does not fit the annotation (a dataclass is an object), or None if it does."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (list, tuple) and isinstance(value, list):  # a tuple is a JSON list (tuple[str, ...])
        for i, item in enumerate(value):
            problem = _problem(item, args[0], f"{name}[{i}]")
            if problem:
                return problem
        return None
    if origin is dict and isinstance(value, dict):
        for key, item in value.items():
            problem = _problem(item, args[1], f"{name}.{key}")
            if problem:
                return problem
        return None
    if _fits(value, hint):
        return None
    return f"Record field {name!r} should be {_describe(hint)}, not {kind(value)}"


def _fits(value: Any, hint: Any) -> bool:
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint is Any:
        return True
    if origin in (typing.Union, types.UnionType):
        return any(_problem(value, arg, "") is None for arg in args)
    if origin in (list, tuple):
        return isinstance(value, list)
    if origin is dict or dataclasses.is_dataclass(hint):
        return isinstance(value, dict)
    if hint in (int, float):
        return isinstance(value, (int, float) if hint is float else int) and not isinstance(value, bool)
    return isinstance(value, hint)


_WORDS = {str: "a string", int: "an integer", float: "a number", bool: "true or false", type(None): "null"}


def _describe(hint: Any) -> str:
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        return " or ".join(_describe(arg) for arg in args)
    if origin in (list, tuple):
        return f"a list of {_describe(args[0]).removeprefix('an ').removeprefix('a ')}s"
    if origin is dict or dataclasses.is_dataclass(hint):
        return "an object"
    return _WORDS.get(hint, str(hint))


def kind(value: Any) -> str:
    """What a JSON value is, in words ("an object", "a list", "a string", ...)."""
    return {dict: "an object", list: "a list"}.get(type(value)) or _WORDS.get(type(value), type(value).__name__)


K = TypeVar("K", bound="Keyed")


@dataclass(frozen=True, slots=True)
class Keyed:
    """A frozen value whose `keys` (not itself a key) are the JSON keys it has, in order; its `Keyed`
    parts (alone or as the items of a tuple) keep theirs, and a part of another type with its own
    `from_dict` is read by it."""

    WHERE: ClassVar[str] = ""
    """Where the value lies in a Record, naming it in errors."""
    keys: tuple[str, ...] = field(default=(), compare=False, repr=False, kw_only=True)

    def to_dict(self) -> dict[str, Any]:
        """The JSON read by `from_dict`: its keys in their order, the absent ones left out."""
        names = {key_of(f): f.name for f in dataclasses.fields(self)}
        return {key: _keyed_json(getattr(self, names[key])) for key in self.keys}

    @classmethod
    def from_dict(cls: type[K], data: Any, where: str | None = None) -> K:
        """The value of its JSON; RecordFormatError naming a field of the wrong type (at `where`,
        by default the class's WHERE)."""
        known = {k: v for k, v in data.items() if k != "keys"} if isinstance(data, dict) else data
        where = cls.WHERE if where is None else where
        return _with_keys(value_of(cls, known, where), data, where)

    @classmethod
    def of(cls: type[K], **figures: Any) -> K:
        """A value built from its figures (keys in the order given)."""
        return cls(**figures, keys=tuple(figures))


def _with_keys(value: K, data: dict[str, Any], where: str) -> K:
    """`value` (built from `data` by value_of) with the keys of `data` it knows, and so its parts."""
    names = {key_of(f): f.name for f in dataclasses.fields(value) if f.name != "keys"}
    parts = {name: _part(getattr(value, name), data[key], f"{where}.{key}")
             for key, name in names.items() if key in data}
    return dataclasses.replace(value, **parts, keys=tuple(k for k in data if k in names))


def _part(part: Any, data: Any, where: str) -> Any:
    if isinstance(part, Keyed):
        return _with_keys(part, data, where)
    if dataclasses.is_dataclass(part) and hasattr(part, "from_dict"):
        return type(part).from_dict(data, where)
    if isinstance(part, tuple) and part and isinstance(part[0], Keyed):
        return tuple(_with_keys(item, item_data, f"{where}[{i}]") for i, (item, item_data) in enumerate(zip(part, data)))
    if isinstance(part, dict) and any(isinstance(item, Keyed) for item in part.values()):
        return {key: _with_keys(item, data[key], f"{where}.{key}") for key, item in part.items()}
    return part


def _keyed_json(value: Any) -> Any:
    if isinstance(value, Keyed):
        return value.to_dict()
    if isinstance(value, (list, tuple)):
        return [_keyed_json(item) for item in value]
    if isinstance(value, dict):
        return {key: _keyed_json(item) for key, item in value.items()}
    if dataclasses.is_dataclass(value):
        return json_of(value)
    return value
