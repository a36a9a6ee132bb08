"""Loading Kineto traces: format drift, truncation and bad input (trace/loader.py)."""

from __future__ import annotations

import gc
import gzip
import warnings
from pathlib import Path

import numpy as np
import pytest

from torchdoctor.errors import TraceFormatError
from torchdoctor.trace import analyse_traces, load_trace
from torchdoctor.trace.events import CPU_OP, KERNEL, PYTHON, RUNTIME


def test_legacy_category_names_are_read_as_kernels_and_runtime(gpu_traces: Path) -> None:
    trace = load_trace(gpu_traces / "legacy-format-inference.json.gz")
    # The file holds 4 `Kernel` and 8 `Runtime` events (its README: legacy categories).
    assert (trace.kind == KERNEL).sum() == 4
    assert (trace.kind == RUNTIME).sum() == 8
    assert trace.rank == 1  # distributedInfo after traceEvents is still read


def test_a_gzip_trace_is_read_and_its_file_closed(gpu_traces: Path) -> None:
    # GzipFile leaves a file object it was given open: every gzip trace loaded leaked one file
    # (a ResourceWarning in the output of every `diagnose` run under `python -W default`).
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        load_trace(gpu_traces / "legacy-format-inference.json.gz")
        gc.collect()
    assert not [w for w in caught if issubclass(w.category, ResourceWarning)]


def test_python_function_events_are_skipped_unless_asked_for(gpu_traces: Path) -> None:
    path = gpu_traces / "h100-bert-small-inference.json.gz"
    assert (load_trace(path).kind == PYTHON).sum() == 0
    assert (load_trace(path, include_python=True).kind == PYTHON).sum() == 1385


def test_float_timestamps_keep_their_fractions(gpu_traces: Path) -> None:
    trace = load_trace(gpu_traces / "v100-cnn-gpu-bound.json.gz")
    assert np.any(trace.ts_us % 1 != 0)
    assert np.all(np.diff(trace.ts_us) >= 0)


def test_a_truncated_gzip_is_analysed_as_far_as_it_goes(gpu_traces: Path, tmp_path: Path) -> None:
    whole = gzip.decompress((gpu_traces / "a100-ddp2-rank0.json.gz").read_bytes())
    cut = tmp_path / "cut.json.gz"
    cut.write_bytes(gzip.compress(whole)[: len(gzip.compress(whole)) // 2])
    trace = load_trace(cut)
    assert trace.truncated
    assert 0 < len(trace) < len(load_trace(gpu_traces / "a100-ddp2-rank0.json.gz"))
    assert "truncated trace" in trace.warnings[0]
    assert any("truncated" in w for w in analyse_traces([cut]).warnings)


def test_a_plain_json_cut_mid_event_keeps_the_events_before_the_cut(gpu_traces: Path, tmp_path: Path) -> None:
    whole = gzip.decompress((gpu_traces / "a100-ddp2-rank0.json.gz").read_bytes())
    cut = tmp_path / "cut.json"
    cut.write_bytes(whole[: len(whole) // 3])
    trace = load_trace(cut)
    assert trace.truncated and len(trace) > 1000


@pytest.mark.parametrize(
    ("content", "message"),
    [(b"", "empty file"), (b"hello, world", "not valid JSON .* near byte 0"), (b'{"foo": [1, 2]}', "no 'traceEvents'")],
)
def test_a_file_that_is_not_a_kineto_trace_is_refused_by_name(tmp_path: Path, content: bytes, message: str) -> None:
    path = tmp_path / "bad.json"
    path.write_bytes(content)
    with pytest.raises(TraceFormatError, match=message) as err:
        load_trace(path)
    assert str(path) in str(err.value) and "traceEvents" in str(err.value)


def test_a_missing_file_is_a_trace_format_error(tmp_path: Path) -> None:
    with pytest.raises(TraceFormatError, match="cannot read trace"):
        load_trace(tmp_path / "nope.json")


def test_an_empty_trace_gives_an_empty_report_with_a_warning(tmp_path: Path) -> None:
    path = tmp_path / "empty.json"
    path.write_bytes(b'{"traceEvents": []}')
    report = analyse_traces([path]).to_dict()
    assert report["ranks"][0]["events_count"] == 0
    assert any("nothing to analyse" in w for w in report["warnings"])


def test_negative_durations_are_clamped_and_string_tids_accepted(tmp_path: Path) -> None:
    path = tmp_path / "odd.json"
    path.write_text(
        '{"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": "worker", "ts": "10.5", "dur": -3},'
        '{"ph": "X", "cat": "cpu_op", "name": "b", "pid": 1, "tid": "7", "ts": 12, "dur": 0}]}'
    )
    trace = load_trace(path)
    assert trace.dur_us.tolist() == [0.0, 0.0]
    assert trace.ts_us.tolist() == [10.5, 12.0]
    assert trace.tid[1] == 7 and trace.tid[0] < 0
    assert (trace.kind == CPU_OP).all()
    assert "negative duration" in trace.warnings[0]
