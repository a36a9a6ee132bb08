"""Bounds on untrusted JSON, checked on the raw bytes before a parser sees them.

A JSON parser spends memory on what the text declares, not on its length: ijson keeps a path
prefix for every open container (20,000 nested `[` in 40 KB cost 1 GB), a parser builds each item
whole before handing it over, and a string or number is buffered until it ends. So a file that
someone e-mailed is scanned first, chunk by chunk, and refused with the byte offset when it:
- nests containers deeper than `max_depth`;
- holds an item (a container opened at depth `item_depth`, e.g. one trace event) longer than
  `max_item_bytes`;
- has more than `max_token_bytes` between two consecutive quotes or brackets (one string, number
  or run of whitespace that long; commas and colons do not count, so a flat list of numbers that
  long is refused too).
The scan is a few numpy passes over each chunk (no Python per byte) and keeps O(1) state between
chunks, so it holds in O(chunk) memory whatever the input. Brackets inside strings do not count and
`\\"` escapes are followed across chunk boundaries. Valid JSON is judged exactly; in text that is
not JSON the guard may refuse somewhat earlier or later than the parser would fail, never letting
through what the bounds forbid before the parser's own error.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import orjson

class JsonBoundError(ValueError):
    """The text breaks a bound; `offset` is the byte (from 0) where it does."""

    def __init__(self, offset: int, message: str) -> None:
        super().__init__(message)
        self.offset = offset


@dataclass(frozen=True, slots=True)
class JsonLimits:
    """The bounds; None switches one off. `item_depth` 3 = the items of a top-level object's list.
    `max_containers`: objects and lists in the whole document (a parser spends about 90 bytes on
    each, so 3.2 million empty objects in 9.6 MB cost 300 MB once parsed)."""

    max_depth: int = 32
    max_item_bytes: int | None = None
    item_depth: int = 3
    max_token_bytes: int | None = None
    max_containers: int | None = None


#: Bounds on a `torchdoctor check` baseline (a JSON file from elsewhere, or a document in the run
#: store) before it is parsed: one nests 4 deep (observations[].phases.PHASE); 32 keeps every reader
#: far from Python's recursion limit.
BASELINE_LIMITS = JsonLimits(max_depth=32)

class JsonGuard:
    """Feed it the bytes of one document in order; it raises JsonBoundError at the first breach."""

    def __init__(self, limits: JsonLimits) -> None:
        self.limits = limits
        self.offset = 0  # bytes scanned so far
        self.depth = 0
        self._in_string = False
        self._backslashes = 0  # length of the backslash run that ended the last chunk
        self._last_mark = 0  # offset of the last quote or structural bracket
        self._item_start = -1  # offset where the open item began, -1: none open
        self._containers = 0  # objects and lists opened so far

    @classmethod
    def resume(cls, limits: JsonLimits, offset: int) -> JsonGuard:
        """A guard for the text from byte `offset` of a document on, where an item of the list at
        `item_depth - 1` starts: it reports what a guard fed everything before would, provided that
        one ends `between_items` (a large trace read in two processes, trace/halves.py)."""
        guard = cls(limits)
        guard.offset = guard._last_mark = offset  # the item's opening bracket is the first mark
        guard.depth = limits.item_depth - 1
        return guard

    def between_items(self) -> bool:
        """The text so far ends between two items of the list at `item_depth - 1`: outside any
        string and open item, and no further from its last mark than a token may be long."""
        cap = self.limits.max_token_bytes
        return (self.depth == self.limits.item_depth - 1 and not self._in_string and not self._backslashes
                and self._item_start < 0 and (cap is None or self.offset - self._last_mark <= cap + 1))

    def closed(self) -> bool:
        """The text so far ends outside every string and container: a whole document, not one cut short."""
        return self.depth == 0 and not self._in_string

    def feed(self, chunk: bytes) -> None:
        if not chunk:
            return
        b = np.frombuffer(chunk, np.uint8)
        folded = b | 0x20  # '[' -> '{' and ']' -> '}'
        marks = np.flatnonzero((folded == 0x7B) | (folded == 0x7D) | (b == 0x22))
        if self._backslashes or chunk.find(b"\\") >= 0:
            marks = self._drop_escaped_quotes(b, marks)
        quote, opening = b[marks] == 0x22, folded[marks] == 0x7B
        breaches: list[tuple[int, str]] = []
        parity = (int(self._in_string) + np.cumsum(quote, dtype=np.int32)) & 1  # 1: in a string after it
        structural = ~quote & (parity == 0)
        self._check_tokens(marks, structural | quote, len(chunk), breaches)
        self._check_nesting(marks[structural] + self.offset, opening[structural], breaches)
        if marks.size:
            self._in_string = bool(parity[-1])
        self.offset += len(chunk)
        self._check_open_item(breaches)
        if breaches:
            raise JsonBoundError(*min(breaches))

    def _drop_escaped_quotes(self, b: np.ndarray, marks: np.ndarray) -> np.ndarray:
        """`marks` without the quotes that follow an odd run of backslashes (this chunk's or carried)."""
        index = np.arange(b.size)
        last_other = np.maximum.accumulate(np.where(b == 0x5C, -1, index))  # last non-backslash so far
        before = np.where(marks > 0, last_other[np.maximum(marks - 1, 0)], -1)
        run = np.where(marks > 0, marks - 1 - before, 0) + np.where(before < 0, self._backslashes, 0)
        escaped = (b[marks] == 0x22) & (run % 2 == 1)
        tail = b.size - 1 - int(last_other[-1])
        self._backslashes = tail + (self._backslashes if last_other[-1] < 0 else 0)
        return marks[~escaped]

    def _check_tokens(self, marks: np.ndarray, token: np.ndarray, length: int,
                      breaches: list[tuple[int, str]]) -> None:
        """The gaps between consecutive token marks (`marks[token]`), the last chunk's included.
        When the first gap is short and the rest of the chunk is no longer than the bound, no gap
        can break it: the common case skips the per-mark arrays (a third of the scan's time)."""
        cap = self.limits.max_token_bytes
        end = self.offset + length
        first = int(marks[token.argmax()]) + self.offset if token.any() else end
        if cap is None or (first - self._last_mark <= cap + 1 and end - first <= cap + 1):
            if first < end:
                self._last_mark = int(marks[token.size - 1 - token[::-1].argmax()]) + self.offset
            return
        pos = marks[token] + self.offset
        edges = np.concatenate(([self._last_mark], pos, [end]))
        if pos.size:
            self._last_mark = int(pos[-1])
        gaps = np.diff(edges)
        long = np.flatnonzero(gaps > cap + 1)
        if long.size:
            start = int(edges[long[0]])
            breaches.append((start, f"a string, number or blank run longer than {cap:,} bytes after byte {start:,}"))

    def _check_nesting(self, pos: np.ndarray, opening: np.ndarray, breaches: list[tuple[int, str]]) -> None:
        if not pos.size:
            return
        self._count_containers(pos, opening, breaches)
        step = np.where(opening, 1, -1).astype(np.int8)
        depth = self.depth + np.cumsum(step, dtype=np.int64)
        too_deep = np.flatnonzero(depth > self.limits.max_depth)
        if too_deep.size:
            where = int(pos[too_deep[0]])
            breaches.append((where, f"nesting deeper than {self.limits.max_depth} levels at byte {where:,}"))
        self.depth = int(depth[-1])
        if self.limits.max_item_bytes is not None:
            self._check_items(pos, step, depth, breaches)

    def _count_containers(self, pos: np.ndarray, opening: np.ndarray, breaches: list[tuple[int, str]]) -> None:
        cap = self.limits.max_containers
        if cap is None:
            return
        opened = np.flatnonzero(opening)
        if self._containers + opened.size > cap:
            where = int(pos[opened[cap - self._containers]])
            breaches.append((where, f"more than {cap:,} objects and lists (the next at byte {where:,})"))
        self._containers += int(opened.size)

    def _check_items(self, pos: np.ndarray, step: np.ndarray, depth: np.ndarray,
                     breaches: list[tuple[int, str]]) -> None:
        """Each item's length, from its opening bracket (or the one still open) to its closing one."""
        cap, level = self.limits.max_item_bytes, self.limits.item_depth
        opens = (step == 1) & (depth == level)
        edges = opens | ((step == -1) & (depth == level - 1))
        if not edges.any():
            return
        edge_pos, edge_open = pos[edges], opens[edges]
        start = np.maximum.accumulate(np.where(edge_open, edge_pos, -1))
        start = np.where(start < 0, self._item_start, start)
        closes = ~edge_open & (start >= 0)
        sizes = edge_pos[closes] - start[closes] + 1
        too_big = np.flatnonzero(sizes > cap)
        if too_big.size:
            where = int(start[closes][too_big[0]])
            breaches.append((where, f"an item longer than {cap:,} bytes starting at byte {where:,}"))
        self._item_start = int(edge_pos[-1]) if edge_open[-1] else -1

    def _check_open_item(self, breaches: list[tuple[int, str]]) -> None:
        cap = self.limits.max_item_bytes
        if cap is not None and self._item_start >= 0 and self.offset - self._item_start > cap:
            where = self._item_start
            breaches.append((where, f"an item longer than {cap:,} bytes starting at byte {where:,}"))


#: The bytes the guard scans at a time: its arrays cost about 40 bytes per bracket or quote of a
#: chunk (a 9.6 MB document fed whole peaked at 380 MB).
CHUNK_BYTES = 1 << 20


def loads_bounded(data: bytes, limits: JsonLimits) -> Any:
    """orjson.loads(data) once `data` is within `limits`; JsonBoundError or orjson's error otherwise."""
    guard = JsonGuard(limits)
    view = memoryview(data)
    for start in range(0, len(data), CHUNK_BYTES):
        guard.feed(bytes(view[start : start + CHUNK_BYTES]))
    return orjson.loads(data)
