"""Property: whatever the file holds, loading and analysing it gives an analysis or a
TraceFormatError, never another exception: a fuzz harness kept in the suite, so that every
parser change meets it.

Three generators: arbitrary JSON documents (any shape, at the top or as traceEvents), complete
events whose fields have arbitrary types, and byte-level damage to a small real-looking trace.
Example counts are kept low enough for CI (tests/fuzzing.py says how to run more).
"""

from __future__ import annotations

import json
import math
import tempfile
from pathlib import Path

from hypothesis import example, given
from hypothesis import strategies as st

from tests.fuzzing import fuzz_settings
from torchdoctor.errors import TraceFormatError
from torchdoctor.trace import analyse_traces

FUZZ = fuzz_settings(100)
_FOLDER = Path(tempfile.mkdtemp(prefix="td-fuzz-"))

scalars = (st.none() | st.booleans() | st.integers(-(2**62), 2**62) | st.floats(allow_nan=False, allow_infinity=False)
           | st.text(max_size=12) | st.sampled_from(["nan", "inf", "-1", "7", "1e3", "ProfilerStep#1", "", "9" * 5000]))  # fmt: skip
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner,
                                                                                          max_size=4), max_leaves=12)  # fmt: skip
_CATS = ["cpu_op", "kernel", "cuda_runtime", "gpu_memcpy", "gpu_memset", "user_annotation", "cuda_sync",
         "gpu_user_annotation", "python_function", "Kernel", "Runtime", "npu_runtime", "Trace"]  # fmt: skip


def _dumps(value: object) -> bytes:
    return json.dumps(value, allow_nan=False).encode()  # NaN and infinities come as strings ("nan", "inf")


def _outcome(content: bytes) -> str:
    """'analysed' or 'refused'; any other exception fails the property."""
    path = _FOLDER / "fuzz.json"
    path.write_bytes(content)
    try:
        report = analyse_traces([path]).to_dict()
    except TraceFormatError:
        return "refused"
    json.dumps(report)  # the report is JSON-ready
    return "analysed"


@st.composite
def events(draw: st.DrawFn) -> dict:
    """A complete event whose every field may have any type, or be missing."""
    event: dict = {"ph": "X", "cat": draw(st.sampled_from(_CATS) | scalars)}
    for key, good in (("name", st.text(max_size=10)), ("ts", st.floats(0, 1e6) | st.integers(0, 10**6)),
                      ("dur", st.floats(-10, 1e4) | st.integers(-10, 10**4)), ("pid", st.integers(0, 9)),
                      ("tid", st.integers(0, 9))):  # fmt: skip
        choice = draw(st.sampled_from(["good", "odd", "missing"]))
        if choice != "missing":
            event[key] = draw(good if choice == "good" else values)
    args = {k: draw(st.integers(-1, 50) | values) for k in ("correlation", "External id", "stream", "bytes")
            if draw(st.booleans())}  # fmt: skip
    event["args"] = draw(st.just(args) | values)
    return event


@FUZZ
@given(document=values | st.integers())
def test_any_json_document_is_analysed_or_refused(document):
    assert _outcome(_dumps(document)) in ("analysed", "refused")
    assert _outcome(_dumps({"traceEvents": document})) in ("analysed", "refused")


@FUZZ
@given(items=st.lists(events() | values, max_size=25), meta=st.dictionaries(
    st.sampled_from(["distributedInfo", "deviceProperties", "baseTimeNanoseconds", "schemaVersion"]),
    values | st.fixed_dictionaries({"rank": values})))  # fmt: skip
def test_events_and_metadata_with_fields_of_any_type_are_analysed_never_a_traceback(items, meta):
    before, after = dict(list(meta.items())[:1]), dict(list(meta.items())[1:])  # metadata on both sides of the list
    text = _dumps({**before, "traceEvents": items, **after})
    assert _outcome(text) == "analysed"


_BASE = _dumps({"traceEvents": [
    {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0, "dur": 100},
    {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 5, "dur": 20},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 6, "dur": 2,
     "args": {"correlation": 7}},
    {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 9, "dur": 50,
     "args": {"correlation": 7, "stream": 7}},
], "distributedInfo": {"rank": 0}})  # fmt: skip


@FUZZ
@given(cuts=st.lists(st.tuples(st.integers(0, len(_BASE)), st.binary(max_size=6)), min_size=1, max_size=4),
       keep=st.integers(0, len(_BASE)))  # fmt: skip
@example(cuts=[(2, b"\x00\x80"), (2, b"\xc0")], keep=14)  # bytes that are not UTF-8 in a key (a failure of a full run)
def test_damaged_bytes_are_analysed_or_refused(cuts, keep):
    data = bytearray(_BASE)
    for at, junk in cuts:
        data[at : at + len(junk)] = junk
    assert _outcome(bytes(data[: max(keep, 1)])) in ("analysed", "refused")


def test_the_fuzz_base_trace_is_a_real_analysis():
    report = analyse_traces([_write(_BASE)]).to_dict()
    assert report["ranks"][0]["steps_count"] == 1 and report["caveats"] == []
    assert not math.isnan(report["ranks"][0]["step_us_median"])


def _write(content: bytes) -> Path:
    path = _FOLDER / "base.json"
    path.write_bytes(content)
    return path
