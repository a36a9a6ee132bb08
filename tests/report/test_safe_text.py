"""Safe terminal output: text from traces, scripts and Records reaches the terminal
without control characters, and rich markup inside it prints literally, in every renderer.

Each renderer draws a hostile name on a real colour terminal console; the captured bytes may hold
rich's own codes (colours `ESC[...m`; for the live progress bar: hide/show cursor, erase line,
cursor up, carriage return) and nothing else that a terminal would act on.
"""

from __future__ import annotations

import re
from io import StringIO
from typing import Callable

import pytest
from rich.console import Console

from torchdoctor.analyse import RunComparison
from torchdoctor.check import REGRESSION, CheckResult, Location, Metric
from torchdoctor.bench.adaptive import BenchResult
from torchdoctor.bench.stats import Verdict
from torchdoctor.finding import Finding
from torchdoctor.infer.result import BatchMeasurement, InferResult, Recommendation, VariantResult
from torchdoctor.compile.report import CompileReport
from torchdoctor.memory.report import MemoryReport
from torchdoctor.record import ExitInfo, Record, RunRow, Summary
from torchdoctor.report import check as check_report
from torchdoctor.report import compile as compile_report
from torchdoctor.report import console as console_report
from torchdoctor.report import distributed, infer, memory, runs, serve, trace, tune
from torchdoctor.report.bench_table import bench_table
from torchdoctor.report.console_findings import print_findings
from torchdoctor.report.progress import observation_progress
from torchdoctor.report.safe_text import cell, clean, markup, plain
from torchdoctor.serve.load import LoadResult
from torchdoctor.serve.sweep import SweepPoint, SweepResult
from torchdoctor.tune.result import TuneResult
from torchdoctor.trace.summary.trace_summary import TraceSummary

LINK = "[link=file:///etc/passwd]x[/link]"
#: Markup (a hyperlink), a clipboard write (OSC 52), a screen clear, a colour, an 8-bit CSI, a bidi
#: override, a bell; the link comes first so that renderers that cut long names keep it whole.
HOSTILE = f"{LINK}\x1b]52;c;cHduZWQ=\x07a\x1b[2Jb\x1b[31mc\x9b2Jd\u202ee\u202c\x07[bold red]f"
_SGR = re.compile("\x1b\\[[0-9;]*m|\x1b\\[\\?25[lh]|\x1b\\[2K|\x1b\\[1A|\r")  # rich's own codes
_ACTIVE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _terminal() -> Console:
    # wide enough that no cell wraps, so the link can be found whole
    return Console(file=StringIO(), force_terminal=True, color_system="standard", width=3000, legacy_windows=False)


def _drawn(draw: Callable[[Console], None]) -> str:
    console = _terminal()
    draw(console)
    return _SGR.sub("", console.file.getvalue())


def _assert_safe(text: str) -> None:
    assert not _ACTIVE.search(text), repr(_ACTIVE.findall(text))
    assert LINK in text


def test_clean_drops_control_characters_and_keeps_text_newlines_and_tabs():
    assert clean("a\x1b[2Jb\x9bc\x00d\x7fe\u202ef\tg\nh") == "a[2Jbcdef\tg\nh"
    assert clean("a\tb\nc", one_line=True) == "a b c"
    assert clean(12.5) == "12.5" and clean("abcdef", limit=3) == "abc"


def test_markup_escapes_tags_and_plain_and_cell_never_read_markup():
    console = Console(file=StringIO(), color_system=None, width=200)
    console.print(markup(LINK), plain(LINK), cell(None), cell(LINK, limit=5))
    assert console.file.getvalue().split() == [LINK, LINK, "-", LINK[:5]]


def _trace_report() -> TraceSummary:
    section = {"rank": 0, "path": HOSTILE, "steps_count": 1, "step_us_median": 10.0, "breakdown_us": {"kernel_us": 1.0},
               "host": {"top_by_self_time": [{"name": HOSTILE, "count": 1, "self_us": 2.0}]}, "device": None}
    slow = {"ranks": [1], "excess_threshold_fraction": 0.15, "groups_compared_count": 1, "left_out": [{"rank": 2, "reason": HOSTILE}],
            "by_rank": [{"rank": 1, "median_excess_fraction": 0.3, "slower_groups_fraction": 1.0}],
            "groups": [{"kernel": HOSTILE, "operator": HOSTILE, "median_us_over_ranks": 1.0}]}  # fmt: skip
    multi = {"ranks_count": 2, "per_rank": [{"rank": 0}, {"rank": 1}], "stragglers": [], "slow_devices": slow}
    return TraceSummary.from_dict({"warnings": [HOSTILE], "caveats": [HOSTILE], "ranks": [section], "multi_rank": multi})


def _finding() -> dict:
    """A finding made of hostile strings, as `Finding.to_dict` writes it."""
    return {"id": HOSTILE, "layer": HOSTILE, "severity": HOSTILE, "title": HOSTILE, "upside": 0.4,
            "evidence": {HOSTILE: HOSTILE}, "explanation": HOSTILE, "fix": {"text": HOSTILE, "code": HOSTILE},
            "knob": HOSTILE, "confidence": "low", "caveats": [HOSTILE]}


def _record() -> Record:
    finding = Finding.from_dict(_finding())
    return Record(script=HOSTILE, argv=[HOSTILE], summary=Summary(num_steps=2, step_s=0.1, forward_fraction=1.0),
                  artifacts={"traces": [HOSTILE]}, memory={"breakdown": {"peak_bytes": 10, "device": HOSTILE}},
                  compile={"graph_count": HOSTILE}, trace={"caveats": [HOSTILE], "warnings": [HOSTILE, "other"]},
                  findings=[finding], warnings=[HOSTILE], exit=ExitInfo(status=1, message=HOSTILE))


def _tune_result() -> TuneResult:
    trial = {"index": 0, "knob": HOSTILE, "value": HOSTILE, "status": "failed", "step_s": 0.1, "reason": HOSTILE,
             "reference": [], "reference_step_s": None, "ratio": 0.5}
    site = {"file": HOSTILE, "line": 1, "code": HOSTILE, "call": HOSTILE, "advice": HOSTILE}
    return TuneResult(tune_id="t", script=HOSTILE, args=[], baseline_step_s=0.1, best_step_s=0.1, speedup=1.0,
                      speedup_ci=None, confirmed=False, metric=HOSTILE, kept={HOSTILE: HOSTILE}, rejected=[],
                      overridden=[{"knob": HOSTILE, "value": 1, "reason": HOSTILE}], intercepted=[],
                      numerics_unchecked=[HOSTILE], trials=[trial], stop_reason=HOSTILE,
                      noise={"runs_step_s": [0.1]}, confirmation={"how": HOSTILE, "reason": HOSTILE},
                      summary=HOSTILE, diff=f"+{HOSTILE}\n",
                      changes=[{"knob": HOSTILE, "snippet": HOSTILE, "sites": [site]}])  # fmt: skip


def _tune_progress(console: Console) -> None:
    from torchdoctor.tune.trial import Trial

    trial = Trial(index=1, knob=HOSTILE, value=HOSTILE, knobs={}, status="rejected", reason=HOSTILE, ratio=0.5)
    with tune.tune_progress(console, 3) as progress:
        progress.trial_started(1, HOSTILE)
        progress.run_started(HOSTILE, HOSTILE)
        progress.trial_finished(trial, trial)
        progress.knob_settled(HOSTILE, trial, trial)
        progress.knob_settled(HOSTILE, None, trial)
        progress.confirmation_finished({"status": "too noisy", "reason": HOSTILE})


def _infer_result() -> InferResult:
    measured = BatchMeasurement(1, 1, 0.1, 0.1, 0.1, 10.0, 0, None, None)
    variant = VariantResult(HOSTILE, "eager", HOSTILE, "failed", HOSTILE, measurements=[measured])
    return InferResult(HOSTILE, HOSTILE, [1], {}, {}, [variant], Recommendation(HOSTILE, HOSTILE, None))


def _load() -> LoadResult:
    return LoadResult(HOSTILE, "closed", 1, 1, {HOSTILE: 1}, 1.0, 1.0, 0.1, 0.2, {1: 1}, 1.0)


def _bench() -> BenchResult:
    verdict = Verdict("faster", 0.5, 0.4, 0.6, 0.02, 0.01, 5, 5)
    return BenchResult(HOSTILE, HOSTILE, {HOSTILE: [0.1, 0.1], "b": [0.05, 0.05]}, {"b": verdict}, None, 0.02, 5,
                       1.0, HOSTILE, 0.95)  # fmt: skip


def _check_result() -> CheckResult:
    ops = [{"name": HOSTILE, "us_per_step_a": 1.0, "us_per_step_b": 2.0, "delta_us_per_step": 1.0, "status": HOSTILE}]
    location = Location(ops=ops, findings_appeared=[{"id": HOSTILE, "severity": HOSTILE, "title": HOSTILE}],
                        traces={"A": HOSTILE, "B": HOSTILE}, notes=[HOSTILE])
    metric = Metric("step_time", "step time", "s", "lower", 0.1, 0.2, 2.0, 1.9, 2.1, gate=REGRESSION, threshold=0.05)
    return CheckResult(REGRESSION, HOSTILE, "ref", script=HOSTILE, argv=[HOSTILE], a={"label": HOSTILE},
                       b={"label": HOSTILE}, metrics=[metric], rounds=5, observations=15, location=location,
                       error={"kind": "side_failed", "detail": HOSTILE}, warnings=[HOSTILE], work_dir=HOSTILE)


def _check_progress(console: Console) -> None:
    with check_report.RichCheckProgress(console) as progress:
        progress.phase(HOSTILE)


def _progress(console: Console) -> None:
    with observation_progress(console) as update:
        update(HOSTILE, 1, 2)


RENDERERS: dict[str, Callable[[Console], None]] = {
    "trace report": lambda c: trace.render_report(_trace_report(), c),
    "trace diff": lambda c: trace.render_diff({"ops": [{"name": HOSTILE, "count_per_step_a": 1.0, "count_per_step_b": 1.0,
                                                        "us_per_step_a": 1.0, "us_per_step_b": 1.0, "status": "same"}],
                                               "kernels": []}, c, 5),
    "record": lambda c: console_report.render_record(_record(), c),
    "compile": lambda c: compile_report.render_compile(CompileReport.from_dict(
        {"graph_count": 1, "graph_breaks": [{"filename": HOSTILE, "lineno": 1, "count": 1, "reason": HOSTILE}],
         "recompiles": [{"function": HOSTILE, "filename": HOSTILE, "lineno": 2, "guard": HOSTILE}],
         "failures": [{"function": HOSTILE, "fail_reason": HOSTILE}], "unavailable": [HOSTILE]}), c),
    "compile advice": lambda c: print_findings([Finding.from_dict(_finding())], c),
    "memory": lambda c: memory.render_memory(MemoryReport.from_dict(
        {"breakdown": {"method": "mem_tracker", "peak_bytes": 100, "device": HOSTILE, "phase": HOSTILE,
                       "reason": HOSTILE, "categories_bytes": {HOSTILE: 50},
                       "modules": [{"name": HOSTILE, "parameter_bytes": 1, "output_bytes": 1}]},
         "snapshot_note": HOSTILE}), c),
    "runs list": lambda c: c.print(runs.runs_table([RunRow(HOSTILE, HOSTILE, "script", HOSTILE, [HOSTILE], 1, HOSTILE,
                                                           0.1, 1.0, HOSTILE)])),
    "runs compare": lambda c: runs.render_comparison(RunComparison(HOSTILE, HOSTILE, 0.1, 0.2, None, [(HOSTILE, HOSTILE, 1.0)],
                                                                   [(HOSTILE, HOSTILE, HOSTILE)], []), c),
    "tune": lambda c: tune.render_result(_tune_result(), c),
    "tune progress": _tune_progress,
    "infer": lambda c: infer.render_infer(_infer_result(), c),
    "comm": lambda c: distributed.render_comm({"backend": HOSTILE, "world_size": 2, "device_name": HOSTILE, "device": "cpu",
                                               "iters": 3, "collectives": {HOSTILE: {"supported": False, "reason": HOSTILE}},
                                               "expected_busbw_gb_per_s": 10.0, "expected_source": HOSTILE,
                                               "findings": [_finding()]}, c),
    "scale": lambda c: distributed.render_scale({"script": HOSTILE, "sizes": [{"unit": "samples/s", "nproc": 1,
                                                 "step_s": 0.1, "throughput_per_s": 1.0, "speedup": 1.0, "efficiency": 1.0,
                                                 "layer": HOSTILE, "exit_reason": HOSTILE}],
                                                 "findings": [_finding()]}, c),
    "serve load": lambda c: serve.render_load(_load(), c),
    "serve sweep": lambda c: serve.render_sweep(SweepResult(HOSTILE, 10.0, [SweepPoint(1, 1.0, _load())], None, HOSTILE), c),
    "bench": lambda c: c.print(bench_table([_bench()], title=HOSTILE)),
    "progress": _progress,
    "check": lambda c: check_report.render_check(_check_result(), c),
    "check progress": _check_progress,
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(RENDERERS))
def test_every_renderer_prints_hostile_text_without_control_characters_and_markup_literally(name):
    _assert_safe(_drawn(RENDERERS[name]))


def test_the_error_line_is_cleaned_too(capsys):
    console_report.print_error(HOSTILE)
    err = _SGR.sub("", capsys.readouterr().err)
    assert not _ACTIVE.search(err.replace("\n", ""))
    assert "".join(err.split()).startswith("torchdoctor:error:" + LINK)
