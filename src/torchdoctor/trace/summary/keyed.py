"""The base of a summary value whose JSON keys vary: an empty or minimal analysis writes fewer keys
(`temporal: {}`, `kernels: {"kernels_count": 0, "top": []}`), and a Record analysed before a figure
existed lacks it. A `Keyed` value remembers the keys it was read with, in their order, so `to_dict`
writes back exactly what `from_dict` read, absent keys left out; its `Keyed` parts (alone or as the
items of a tuple) do the same, and a part of another type with its own `from_dict` is read by it."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeVar

from torchdoctor.jsonfields import json_of, value_of

K = TypeVar("K", bound="Keyed")


@dataclass(frozen=True, slots=True)
class Keyed:
    """A frozen value whose `keys` (not itself a key) are the JSON keys it has, in order."""

    WHERE: ClassVar[str] = ""
    """Where the value lies in a Record, naming it in errors."""
    keys: tuple[str, ...] = field(default=(), compare=False, repr=False, kw_only=True)

    def to_dict(self) -> dict[str, Any]:
        """The JSON read by `from_dict`: its keys in their order, the absent ones left out."""
        return {key: _json(getattr(self, key)) for key in self.keys}

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
    names = [f.name for f in dataclasses.fields(value) if f.name != "keys"]
    parts = {name: _part(getattr(value, name), data[name], f"{where}.{name}") for name in names if name in data}
    return dataclasses.replace(value, **parts, keys=tuple(k for k in data if k in names))


def _part(part: Any, data: Any, where: str) -> Any:
    if isinstance(part, Keyed):
        return _with_keys(part, data, where)
    if dataclasses.is_dataclass(part) and hasattr(part, "from_dict"):
        return type(part).from_dict(data, where)
    if isinstance(part, tuple) and part and isinstance(part[0], Keyed):
        return tuple(_with_keys(item, item_data, f"{where}[{i}]") for i, (item, item_data) in enumerate(zip(part, data)))
    return part


def _json(value: Any) -> Any:
    if isinstance(value, Keyed):
        return value.to_dict()
    if isinstance(value, (list, tuple)):
        return [_json(item) for item in value]
    if dataclasses.is_dataclass(value):
        return json_of(value)
    return value
