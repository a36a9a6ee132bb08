"""The JSON guard: bounds on nesting, item and token size, judged on raw bytes in any chunking."""

from __future__ import annotations

import json

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.fuzzing import fuzz_settings
from torchdoctor.jsonguard import JsonBoundError, JsonGuard, JsonLimits, loads_bounded

FUZZ = fuzz_settings(150)


def _scan(data: bytes, limits: JsonLimits, chunk: int | None = None) -> int | None:
    """The offset of the breach, or None when `data` is within the limits."""
    guard = JsonGuard(limits)
    step = chunk or max(len(data), 1)
    try:
        for start in range(0, len(data), step):
            guard.feed(data[start : start + step])
    except JsonBoundError as exc:
        return exc.offset
    return None


def _depth(value: object) -> int:
    if isinstance(value, dict):
        return 1 + max(map(_depth, value.values()), default=0)
    if isinstance(value, list):
        return 1 + max(map(_depth, value), default=0)
    return 0


def test_nesting_deeper_than_the_bound_is_refused_at_the_bracket_that_passes_it():
    data = b'{"traceEvents": [' + b"[" * 20000 + b"]" * 20000 + b"]}"
    with pytest.raises(JsonBoundError, match="nesting deeper than 32 levels at byte 47") as err:
        JsonGuard(JsonLimits(max_depth=32)).feed(data)
    assert err.value.offset == 47 and data[47:48] == b"["


def test_brackets_and_escaped_quotes_inside_strings_do_not_count():
    data = json.dumps({"a": '[[[["]]]] \\" [[[ \\\\', "b": [[1]]}).encode()
    assert _scan(data, JsonLimits(max_depth=3)) is None
    assert _scan(data, JsonLimits(max_depth=2)) == data.index(b"[[1") + 1


def test_an_escape_split_across_chunks_is_followed():
    data = b'{"a": "x\\\\\\"[[[[[[", "b": 1}'  # "x\\\"[[[[[[": an escaped backslash, then an escaped quote
    assert json.loads(data)["a"] == 'x\\"[[[[[['
    for chunk in range(1, len(data) + 1):
        assert _scan(data, JsonLimits(max_depth=1), chunk) is None


def test_an_item_longer_than_the_cap_is_refused_where_it_starts_even_before_it_closes():
    event = b'{"name": "k", "args": {"a": [' + b"0," * 1000 + b"0]}}"
    data = b'{"traceEvents": [{"ph": "X"}, ' + event + b"]}"
    limits = JsonLimits(max_item_bytes=1000)
    assert _scan(data, limits) == data.index(b'{"name"')
    assert _scan(data[:-100], limits, chunk=64) == data.index(b'{"name"')  # still open when refused


def test_a_long_string_or_number_is_refused_and_a_short_one_passes():
    limits = JsonLimits(max_token_bytes=100)
    assert _scan(b'{"a": "' + b"x" * 101 + b'"}', limits) == 6
    assert _scan(b'{"a": ' + b"1" * 200 + b"}", limits) is not None
    assert _scan(b'{"a": "' + b"x" * 99 + b'", "b": "' + b"y" * 99 + b'"}', limits, chunk=7) is None


def test_loads_bounded_parses_what_is_within_the_limits_and_refuses_the_rest():
    assert loads_bounded(b'{"a": [1, {"b": 2}]}', JsonLimits(max_depth=3)) == {"a": [1, {"b": 2}]}
    with pytest.raises(JsonBoundError):
        loads_bounded(b'{"a": [1, {"b": 2}]}', JsonLimits(max_depth=2))
    with pytest.raises(orjson.JSONDecodeError):
        loads_bounded(b'{"a": [1, ', JsonLimits())


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(alphabet=st.sampled_from('ab"\\[]{}\n\u00e9\u4e2d'), max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(alphabet='k"\\[{', max_size=3), inner, max_size=4),
    max_leaves=30,
)  # fmt: skip


@FUZZ
@given(value=json_values, chunk=st.integers(1, 40), bound=st.integers(1, 8))
def test_on_valid_json_the_verdict_is_exact_and_the_same_in_any_chunking(value, chunk, bound):
    data = json.dumps(value, ensure_ascii=False).encode()
    whole, split = _scan(data, JsonLimits(max_depth=bound)), _scan(data, JsonLimits(max_depth=bound), chunk)
    assert (whole is None) == (_depth(value) <= bound)
    assert split == whole


@FUZZ
@given(value=json_values, chunk=st.integers(1, 40), cap=st.integers(2, 60))
def test_item_sizes_are_measured_the_same_in_any_chunking(value, chunk, cap):
    data = json.dumps({"traceEvents": [value, value]}).encode()
    limits = JsonLimits(max_item_bytes=cap, item_depth=3)
    item = json.dumps(value).encode()
    expected_refused = isinstance(value, (list, dict)) and len(item) > cap
    assert (_scan(data, limits) is not None) == expected_refused
    assert _scan(data, limits, chunk) == _scan(data, limits)


def test_more_containers_than_allowed_are_refused_at_the_first_one_past_the_bound():
    from torchdoctor.jsonguard import JsonBoundError, JsonLimits, loads_bounded

    text = b'{"findings": [' + b",".join([b"{}"] * 10) + b"]}"
    assert loads_bounded(text, JsonLimits(max_containers=12))["findings"] == [{}] * 10
    with pytest.raises(JsonBoundError, match="more than 11 objects and lists") as raised:
        loads_bounded(text, JsonLimits(max_containers=11))
    assert text[raised.value.offset:].startswith(b"{}]}")


def test_containers_are_counted_across_chunks():
    from torchdoctor.jsonguard import JsonBoundError, JsonGuard, JsonLimits

    guard = JsonGuard(JsonLimits(max_containers=3))
    guard.feed(b"[[]")
    with pytest.raises(JsonBoundError, match="the next at byte 7"):
        guard.feed(b",[],[]]")
