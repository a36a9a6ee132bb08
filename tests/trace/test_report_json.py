"""json_chunks writes orjson's bytes in pieces, a list given as an iterator one item at a time
(trace/report_json.py)."""

from __future__ import annotations

import orjson
import pytest

from torchdoctor.trace.report_json import json_chunks

OPTIONS = [0, orjson.OPT_SORT_KEYS, orjson.OPT_INDENT_2, orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS,
           orjson.OPT_INDENT_2 | orjson.OPT_APPEND_NEWLINE | orjson.OPT_SERIALIZE_NUMPY]
ITEMS = [{"z": 1, "a": [1.5, None, {"n": "line\nbreak \u00e9", "e": {}}], "m": []}, {}, {"b": [[], [0.1]]}]


@pytest.mark.parametrize("option", OPTIONS)
def test_the_pieces_are_the_bytes_orjson_writes_for_the_whole_dict(option: int) -> None:
    whole = {"version": 2, "ranks": ITEMS, "empty": [], "nested": {"k": [1, {"x": None}]}, "after": "end"}
    streamed = {**whole, "ranks": iter(ITEMS)}
    assert b"".join(json_chunks(streamed, option)) == orjson.dumps(whole, option=option)


@pytest.mark.parametrize("option", OPTIONS)
def test_an_empty_iterator_is_an_empty_list(option: int) -> None:
    assert b"".join(json_chunks({"ranks": iter(())}, option)) == orjson.dumps({"ranks": []}, option=option)


def test_the_items_are_drawn_one_at_a_time_as_the_pieces_are_taken() -> None:
    drawn: list[int] = []

    def items():
        for i in range(3):
            drawn.append(i)
            yield {"i": i}

    pieces = json_chunks({"ranks": items()})
    while not drawn:
        next(pieces)
    assert drawn == [0]
