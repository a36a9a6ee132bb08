"""Loading hostile traces: bounded parsing, odd field types, and input that is not JSON.

Every case ends in a Trace whose warnings say what was repaired, or in a TraceFormatError naming
the file and where in it the problem is; never in another exception.
"""

from __future__ import annotations

import gzip
import json
import math
from pathlib import Path

import pytest

from torchdoctor.errors import TraceFormatError
from torchdoctor.trace import analyse_traces, load_trace, loader
from torchdoctor.trace.events import KERNEL, RUNTIME


def _event(name: str = "aten::mm", cat: str = "cpu_op", **fields: object) -> dict:
    return {"ph": "X", "cat": cat, "name": name, "pid": 1, "tid": 1, "ts": 10, "dur": 5, **fields}


def _write(tmp_path: Path, content: str | bytes, name: str = "t.json") -> Path:
    path = tmp_path / name
    path.write_bytes(content.encode() if isinstance(content, str) else content)
    return path


def _trace(tmp_path: Path, events: list) -> Path:
    return _write(tmp_path, json.dumps({"traceEvents": events}))


def test_nesting_deeper_than_any_real_trace_is_refused_with_the_file_and_the_offset(tmp_path):
    path = _write(tmp_path, '{"traceEvents": [' + "[" * 20000 + "]" * 20000 + "]}")
    with pytest.raises(TraceFormatError, match=r"nesting deeper than 32 levels at byte 47") as err:
        load_trace(path)
    assert str(path) in str(err.value)


def test_deep_nesting_inside_one_events_args_is_refused_where_it_passes_the_bound(tmp_path):
    args = '{"a":' * 100 + "1" + "}" * 100
    path = _write(tmp_path, '{"traceEvents": [{"ph": "X", "cat": "kernel", "ts": 1, "args": ' + args + "}]}")
    with pytest.raises(TraceFormatError, match="nesting deeper than 32 levels"):
        load_trace(path)


def test_an_event_over_one_mib_is_refused_where_it_starts(tmp_path):
    big = json.dumps(_event(args={"shapes": [[1, 2]] * 200_000}))
    path = _write(tmp_path, '{"traceEvents": [' + big + "]}")
    with pytest.raises(TraceFormatError, match="an item longer than 1,048,576 bytes starting at byte 17"):
        load_trace(path)


def test_a_gzip_that_expands_more_than_forty_times_is_refused_as_a_possible_bomb(tmp_path, monkeypatch):
    monkeypatch.setattr(loader, "_MIN_GZIP_ALLOWANCE", 1 << 20)  # the floor (16 MiB) made small, for speed
    one = json.dumps(_event()) + ","
    body = ('{"traceEvents": [' + one * 20_000 + '{"ph": "M"}]}').encode()  # 2 MB that compress ~500x
    path = _write(tmp_path, gzip.compress(body), "bomb.json.gz")
    with pytest.raises(TraceFormatError, match="expands to more than 1,048,576 bytes .*gunzip -k"):
        load_trace(path)
    path.write_bytes(gzip.compress(body[: body.rindex(b"},", 0, 700_000) + 1] + b"]}"))
    assert len(load_trace(path)) > 5000  # under the floor, any ratio loads


def test_padding_after_a_small_gzip_bomb_earns_it_no_allowance(tmp_path, monkeypatch):
    monkeypatch.setattr(loader, "_MIN_GZIP_ALLOWANCE", 1 << 20)
    body = ('{"traceEvents": [' + (json.dumps(_event()) + ",") * 80_000 + '{"ph": "M"}]}').encode()
    bomb = gzip.compress(body)  # 8 MB from 40 KB; read ahead by 128 KiB, it may expand to 6.5 MB
    path = _write(tmp_path, bomb + b"\0" * 300_000, "padded.json.gz")
    assert loader.MAX_GZIP_RATIO * path.stat().st_size > len(body)  # its size alone would let it through
    with pytest.raises(TraceFormatError, match="expands to more than .* bytes \\(50x the compressed bytes read so far"):
        load_trace(path)


def test_empty_gzip_members_before_a_bomb_earn_it_no_allowance(tmp_path, monkeypatch):
    monkeypatch.setattr(loader, "_MIN_GZIP_ALLOWANCE", 1 << 20)
    body = ('{"traceEvents": [' + (json.dumps(_event()) + ",") * 80_000 + '{"ph": "M"}]}').encode()
    empty = gzip.compress(b"") * 20_000  # 20,000 members of ~20 bytes that expand to nothing
    path = _write(tmp_path, empty + gzip.compress(body), "members.json.gz")
    assert 40 * path.stat().st_size > len(body)  # its size alone would let it through
    with pytest.raises(TraceFormatError, match="expands to more than .* bytes \\(50x the compressed bytes read so far"):
        load_trace(path)
    small = ('{"traceEvents": [' + (json.dumps(_event()) + ",") * 5_000 + '{"ph": "M"}]}').encode()
    path.write_bytes(gzip.compress(b"") * 3 + gzip.compress(small[:200_000]) + gzip.compress(small[200_000:]))
    assert len(load_trace(path)) == 5_000  # members, empty ones among them, still load under the floor


@pytest.mark.parametrize("cut_at", [0.3, 0.5, 0.9])
def test_a_cut_gzip_keeps_every_event_the_same_cut_plain_file_keeps(tmp_path, cut_at):
    events = [_event(f"k{i % 50}", "kernel", ts=i * 10, args={"correlation": i}) for i in range(30_000)]
    whole = gzip.compress(json.dumps({"traceEvents": events}).encode())
    cut = _write(tmp_path, whole[: int(len(whole) * cut_at)], "cut.json.gz")
    reader = gzip.GzipFile(cut)
    text = b""
    try:
        while piece := reader.read1(1 << 16):
            text += piece
    except EOFError:
        pass
    plain = _write(tmp_path, text, "cut.json")
    gz, same = load_trace(cut), load_trace(plain)
    assert gz.truncated and same.truncated and len(gz) == len(same) > 0


def test_invalid_json_is_an_error_with_an_offset_and_is_not_called_truncated(tmp_path):
    text = json.dumps({"traceEvents": [_event(), _event()]})
    path = _write(tmp_path, text[:-2] + ', {"ph": X}]}')
    with pytest.raises(TraceFormatError, match="is not valid JSON") as err:
        load_trace(path)
    where_x = len(text) - 2 + len(', {"ph": ')
    assert f"near byte {where_x}" in str(err.value)
    assert "truncated" not in str(err.value)


def test_a_file_cut_mid_write_is_truncated_not_invalid(tmp_path):
    text = json.dumps({"traceEvents": [_event(), _event(ts=20), _event(ts=30)]})
    trace = load_trace(_write(tmp_path, text[: text.index('"ts": 30')]))
    assert trace.truncated and len(trace) == 2
    assert "truncated trace" in trace.warnings[0]


@pytest.mark.parametrize(
    ("field", "cut_after"),
    [('"ts": 30.5', '"ts": 30.'), ('"ts": -1', '"ts": -'), ('"ts": 3e1', '"ts": 3e'), ('"flag": true', '"flag": tr'),
     ('"name": "a\\u0041"', '"name": "a\\'), ('"name": "a\\u0041"', '"name": "a\\u00')],
)
def test_a_file_cut_inside_its_last_token_is_truncated_not_invalid(tmp_path, field, cut_after):
    """Seen in CI: a rank's trace cut after a timestamp's decimal point was refused as invalid JSON."""
    text = json.dumps({"traceEvents": [_event(), _event(ts=20)]})[:-2] + ', {"ph": "X", ' + field + "}]}"
    trace = load_trace(_write(tmp_path, text[: text.index(cut_after) + len(cut_after)]))
    assert trace.truncated and len(trace) == 2 and "truncated trace" in trace.warnings[0]


def test_a_file_with_a_bad_token_followed_by_more_text_is_invalid_not_truncated(tmp_path):
    text = json.dumps({"traceEvents": [_event(), _event()]})
    with pytest.raises(TraceFormatError, match="is not valid JSON"):
        load_trace(_write(tmp_path, text[:-2] + ', {"ts": 3.x}]}'))


@pytest.mark.parametrize("cut", [False, True], ids=["whole", "cut"])
def test_bytes_that_are_not_utf8_are_refused_as_not_json(tmp_path, cut):
    """Found by the fuzz test: yajl passed the bytes on and Python's UnicodeDecodeError escaped."""
    text = json.dumps({"traceEvents": [_event(), _event()]}).encode()
    at = text.index(b"aten::m") + len("aten::m")
    path = _write(tmp_path, (text[:at] + b"\xc0\x80" + text[at:])[: at + 4 if cut else None])
    with pytest.raises(TraceFormatError, match="is not valid JSON"):
        analyse_traces([path])


def test_a_truncated_gpu_trace_warns_that_its_gpu_figures_are_missing(tmp_path):
    cpu = [_event("cudaLaunchKernel", "cuda_runtime", args={"correlation": i}, ts=i) for i in range(5)]
    gpu = [_event("gemm", "kernel", args={"correlation": i, "stream": 7}, ts=i + 2) for i in range(5)]
    text = json.dumps({"traceEvents": cpu + gpu})
    trace = load_trace(_write(tmp_path, text[: text.index('"gemm"')]))
    assert (trace.kind == RUNTIME).sum() == 5 and not (trace.kind == KERNEL).any()
    assert "no GPU event survived the cut" in trace.warnings[0]


def test_a_trace_events_value_that_is_not_a_list_is_refused(tmp_path):
    with pytest.raises(TraceFormatError, match="'traceEvents' is an object, not a list of events"):
        load_trace(_write(tmp_path, '{"traceEvents": {"ph": "X"}}'))
    with pytest.raises(TraceFormatError, match="'traceEvents' is null"):
        load_trace(_write(tmp_path, '{"traceEvents": null}'))


@pytest.mark.parametrize(
    ("fields", "field"),
    [({"args": "x"}, "'args' 1"), ({"args": [1, 2]}, "'args' 1"), ({"args": {"correlation": "abc"}}, "'correlation' 1"),
     ({"args": {"External id": "x"}}, "'External id' 1"), ({"args": {"bytes": 1.5}}, "'bytes' 1"),
     ({"pid": [1]}, "'pid' 1"), ({"tid": {"t": 1}}, "'tid' 1"), ({"name": {"a": 1}}, "'name' 1")],
)  # fmt: skip
def test_a_field_of_the_wrong_type_is_read_as_absent_and_counted(tmp_path, fields, field):
    trace = load_trace(_trace(tmp_path, [{**_event("cudaLaunchKernel", "cuda_runtime"), **fields}]))
    assert len(trace) == 1
    assert trace.correlation[0] == -1 and trace.external_id[0] == -1
    assert any("fields of an unexpected type" in w and field in w for w in trace.warnings)


def test_a_null_correlation_is_absent_without_a_warning_and_numeric_strings_are_read(tmp_path):
    trace = load_trace(_trace(tmp_path, [_event(cat="kernel", args={"correlation": None}),
                                         _event(cat="kernel", ts=11, args={"correlation": "42", "stream": "7"})]))  # fmt: skip
    assert trace.correlation.tolist() == [-1, 42] and trace.stream[1] == 7
    assert trace.warnings == ()


def test_nan_and_infinite_times_are_skipped_and_counted(tmp_path):
    trace = load_trace(_trace(tmp_path, [_event(), _event(dur="nan"), _event(ts="inf"), _event(ts="-inf")]))
    assert len(trace) == 1
    assert any("3 events had a NaN or infinite 'ts'/'dur'" in w for w in trace.warnings)


def _steps_at(base: float, dur: float) -> list:
    return [e for i in range(3) for e in (
        _event(f"ProfilerStep#{i}", "user_annotation", ts=base + 10 * i, dur=dur),
        _event("cudaLaunchKernel", "cuda_runtime", ts=base + 10 * i + 1, dur=dur, args={"correlation": i + 1}),
        _event("gemm", "kernel", pid=0, tid=7, ts=base + 10 * i + 2, dur=dur, args={"correlation": i + 1}))]


def _numbers(value: object) -> list[float]:
    if isinstance(value, dict):
        return [n for v in value.values() for n in _numbers(v)]
    if isinstance(value, list):
        return [n for v in value for n in _numbers(v)]
    return [value] if isinstance(value, float) else []


@pytest.mark.parametrize("base, dur", [(1e300, 1.7e308), (1.0, 1e300), (-1e300, 5.0), (2**62, 5)])
def test_times_beyond_two_to_the_53_microseconds_are_skipped_and_counted(tmp_path, base, dur):
    trace = load_trace(_trace(tmp_path, [_event(), *_steps_at(base, dur)]))
    assert len(trace) == 1
    assert any("9 events had a NaN or infinite 'ts'/'dur', or one beyond 2^53 us" in w for w in trace.warnings)


def test_times_at_the_bound_give_finite_figures(tmp_path):
    report = analyse_traces([_trace(tmp_path, _steps_at(2.0**53 - 100, 2.0**53))]).to_dict()
    numbers = _numbers(report)
    assert numbers and all(math.isfinite(n) for n in numbers)


def test_items_that_are_not_events_are_skipped_and_counted(tmp_path):
    trace = load_trace(_trace(tmp_path, [_event(), 1, "x", None, [], True, {"ph": "X", "cat": ["cpu_op"], "ts": 1}]))
    assert len(trace) == 1
    assert any("5 items of 'traceEvents' are not event objects" in w for w in trace.warnings)
    assert any("categories this analysis does not read" in w and "['cpu_op']" in w for w in trace.warnings)


def test_events_in_categories_no_analysis_reads_are_named_but_the_trace_span_is_not(tmp_path):
    trace = load_trace(_trace(tmp_path, [_event(), _event(cat="npu_runtime"), _event(cat="npu_runtime"),
                                         _event(cat="Trace"), _event(cat="overhead")]))  # fmt: skip
    (warning,) = trace.warnings
    assert "2 complete events are in categories this analysis does not read ('npu_runtime' (2))" in warning


def test_every_load_warning_is_a_caveat_of_the_analysis(tmp_path):
    report = analyse_traces([_trace(tmp_path, [_event(), _event(dur="nan")])]).to_dict()
    assert report["caveats"] == report["ranks"][0]["caveats"] == [w for w in report["warnings"] if "NaN" in w]
    assert report["caveats"]


def test_the_real_traces_load_without_any_warning(gpu_traces: Path):
    for path in sorted(gpu_traces.glob("**/*.json.gz")):
        assert load_trace(path).warnings == (), path.name
