"""A dict's JSON in pieces, a list of it one item at a time: the same bytes as orjson.dumps.

The report of many ranks is mostly its ranks' sections (every step of every rank); built whole,
as a dict and then as one `bytes`, it would hold every rank at once. `json_chunks` writes the
top-level dict key by key and a value given as an iterator item by item, each item encoded alone
(and indented as orjson would at its depth), so that one rank's section is expanded at a time.
orjson has no incremental encoder; this is the smallest hand-written layer over it: only the
top-level braces, the keys and the commas are written here, every value is orjson's.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import orjson

from torchdoctor.outputs import dumps_json

_INDENT = b"  "  # OPT_INDENT_2


def json_chunks(top: Mapping[str, Any], option: int = 0) -> Iterator[bytes]:
    """Pieces whose concatenation is `dumps_json(top, option=option)` with every iterator among
    `top`'s values written as a list of its items. Supports OPT_INDENT_2, OPT_SORT_KEYS,
    OPT_APPEND_NEWLINE and the options that only change how values are encoded."""
    indent = bool(option & orjson.OPT_INDENT_2)
    inner = option & ~orjson.OPT_APPEND_NEWLINE
    keys = sorted(top) if option & orjson.OPT_SORT_KEYS else list(top)
    yield b"{"
    for i, key in enumerate(keys):
        yield (b"," if i else b"") + _newline(indent, 1) + orjson.dumps(key) + (b": " if indent else b":")
        value = top[key]
        if isinstance(value, Iterator):
            yield from _list_chunks(value, inner, indent)
        else:
            yield _nested(dumps_json(value, option=inner), indent, 1)
    yield (_newline(indent, 0) if keys else b"") + b"}"
    if option & orjson.OPT_APPEND_NEWLINE:
        yield b"\n"


def _list_chunks(items: Iterator[Any], option: int, indent: bool) -> Iterator[bytes]:
    """A list at depth 1 (a top-level key's value), one item at a time."""
    yield b"["
    count = 0
    for count, item in enumerate(items, 1):
        yield (b"," if count > 1 else b"") + _newline(indent, 2) + _nested(dumps_json(item, option=option), indent, 2)
    yield (_newline(indent, 1) if count else b"") + b"]"


def _newline(indent: bool, depth: int) -> bytes:
    return b"\n" + _INDENT * depth if indent else b""


def _nested(encoded: bytes, indent: bool, depth: int) -> bytes:
    """A value encoded at depth 0, indented for `depth` (JSON text holds no raw newline but
    between tokens: orjson escapes those within strings)."""
    return encoded.replace(b"\n", _newline(True, depth)) if indent else encoded
