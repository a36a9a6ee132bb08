"""The HTML report in real headless Chromium: it draws, stays offline and keeps hostile names inert."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.report.browser import CHROMIUM, visit
from tests.report.conftest import HOSTILE
from torchdoctor.record import Record
from torchdoctor.report.base import write_report
from torchdoctor.trace.analysis import analyse_traces

COUNTS = {
    "images": "document.images.length",
    "step_bars": "document.querySelectorAll('#td-steps rect').length",
    "timeline_bars": "document.querySelectorAll('#td-timeline rect').length",
    "findings": "document.querySelectorAll('#findings article').length",
    "operators": "document.querySelectorAll('#operators table.ops tr').length",
    "hostile_in_timeline": f"[...document.querySelectorAll('#td-timeline title')].filter(t => t.textContent.startsWith({json.dumps(HOSTILE)})).length",
    "hostile_as_text": f"[...document.querySelectorAll('.ftitle, .fix, #findings p, h1 .subtle')].filter(e => e.textContent.includes({json.dumps(HOSTILE[:9])}) || e.textContent.includes('<img')).length",
    "scripts": "document.scripts.length",
}  # fmt: skip


@pytest.fixture(scope="module")
def page_visit(hostile_record: Record, tmp_path_factory: pytest.TempPathFactory) -> tuple:
    if CHROMIUM is None:
        pytest.fail("chromium is not installed: `apt-get install chromium` (make setup does it as root)")
    tmp = tmp_path_factory.mktemp("browser")
    page = write_report(hostile_record, tmp / "report.html")
    shot = tmp / "report.png"
    return visit(page, tmp / "profile", shot, list(COUNTS.values())), page, shot


def _count(page_visit: tuple, name: str) -> int:
    return page_visit[0].results[COUNTS[name]]


def test_the_report_loads_with_no_console_errors_dialogs_or_outside_requests(page_visit: tuple) -> None:
    result, page, _ = page_visit
    assert result.console_errors == []
    assert result.dialogs == []
    assert result.requests == [page.resolve().as_uri()]


def test_the_charts_are_drawn_from_the_embedded_record(page_visit: tuple, hostile_record: Record) -> None:
    assert _count(page_visit, "step_bars") >= hostile_record.summary.num_steps
    timeline = hostile_record.trace["timeline"]
    assert _count(page_visit, "timeline_bars") == len(timeline["events"]) > 0
    assert _count(page_visit, "findings") == 1
    assert _count(page_visit, "operators") > 1


def test_hostile_names_from_the_trace_script_and_findings_stay_text(page_visit: tuple) -> None:
    assert _count(page_visit, "images") == 0
    assert _count(page_visit, "scripts") == 2  # the embedded Record and the report's own script
    assert _count(page_visit, "hostile_in_timeline") >= 1
    assert _count(page_visit, "hostile_as_text") >= 4  # title, explanation, fix, script name


def test_a_screenshot_is_saved(page_visit: tuple) -> None:
    shot: Path = page_visit[2]
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert shot.stat().st_size > 20_000
    print(f"screenshot: {shot}")


def test_the_memory_chart_stacks_each_series(tmp_path: Path) -> None:
    memory = {"timeline": {"t_s": [0.0, 0.5, 1.0], "series": {"parameters": [1e6, 1e6, 1e6], HOSTILE: [0, 4e6, 2e6]}}}
    page = write_report(Record(memory=memory), tmp_path / "memory.html")
    polygons = "[...document.querySelectorAll('#td-memory polygon title')].map(t => t.textContent)"
    result = visit(page, tmp_path / "profile", tmp_path / "memory.png", [polygons])
    assert result.console_errors == [] and result.dialogs == []
    assert result.results[polygons] == ["parameters", HOSTILE]


def test_a_measured_step_is_drawn_as_memory_over_time(tmp_path: Path) -> None:
    from tests.memory.test_timeline import _measured_step

    memory = _measured_step()
    page = write_report(Record(memory=memory), tmp_path / "memory.html")
    polygons = "[...document.querySelectorAll('#td-memory polygon title')].map(t => t.textContent)"
    shot = tmp_path / "memory.png"
    result = visit(page, tmp_path / "profile", shot, [polygons])
    assert result.console_errors == [] and result.dialogs == []
    assert result.results[polygons] == list(memory["timeline"]["series"]) == \
        ["parameters", "gradients", "optimizer_state", "activations", "temporaries"]
    print(f"screenshot: {shot}")


RANK_COUNTS = {
    "groups": "[...document.querySelectorAll('#td-timeline g.rank-lanes')].map(g => g.dataset.rank)",
    "labels": "[...document.querySelectorAll('#td-timeline .lane-label')].map(t => t.textContent)",
    "bars": "document.querySelectorAll('#td-timeline rect').length",
    "hostile": f"[...document.querySelectorAll('#td-timeline title')].filter(t => t.textContent.startsWith({json.dumps(HOSTILE)})).length",
    "images": "document.images.length",
}  # fmt: skip


def test_two_ranks_traces_draw_one_lane_group_per_rank(gpu_traces: Path, tmp_path: Path) -> None:
    files = [gpu_traces / "multirank-sampled" / f"rank-{r}.json.gz" for r in (0, 1)]
    trace = analyse_traces(files).to_dict()
    trace["rank_timelines"][1]["events"][0]["name"] = HOSTILE  # a name from a trace stays text
    page = write_report(Record(kind="traces", trace=trace), tmp_path / "ranks.html")
    shot = tmp_path / "ranks.png"
    result = visit(page, tmp_path / "profile", shot, list(RANK_COUNTS.values()))
    assert result.console_errors == [] and result.dialogs == [] and result.requests == [page.resolve().as_uri()]
    got = {name: result.results[expr] for name, expr in RANK_COUNTS.items()}
    assert got["groups"] == ["0", "1"]
    labels = got["labels"]
    assert len(labels) == sum(len(t["lanes"]) for t in trace["rank_timelines"])
    assert {label.split(" \u00b7 ")[0] for label in labels} == {"rank 0", "rank 1"}
    assert got["bars"] == sum(len(t["events"]) for t in trace["rank_timelines"])
    assert (got["hostile"], got["images"]) == (1, 0)
    print(f"screenshot: {shot}")


WHOLE_RUN = {
    "bands": "[...document.querySelectorAll('#td-whole-run rect.band title')].map(t => t.textContent)",
    "lines": "document.querySelectorAll('#td-whole-run polyline').length",
    "images": "document.images.length",
}  # fmt: skip


def test_the_whole_run_is_drawn_with_its_badput_bands(tmp_path: Path) -> None:
    from tests.report.test_whole_run_html import CAUSE, whole_run_record

    record = whole_run_record(tmp_path)
    for part in record.whole_run["parts"]:
        if part["cause"] == CAUSE:
            part["cause"] = HOSTILE  # a function name from the script stays text
    page = write_report(record, tmp_path / "whole.html")
    shot = tmp_path / "whole.png"
    result = visit(page, tmp_path / "profile", shot, list(WHOLE_RUN.values()))
    assert result.console_errors == [] and result.dialogs == [] and result.requests == [page.resolve().as_uri()]
    bands = result.results[WHOLE_RUN["bands"]]
    assert bands[0] == "start-up and the script's top level" and bands[-1] == "after the last step, and the exit"
    assert sum(f": {HOSTILE}, " in b for b in bands) == 12
    assert result.results[WHOLE_RUN["lines"]] == 2 and result.results[WHOLE_RUN["images"]] == 0
    print(f"screenshot: {shot}")


def test_a_torchrun_jobs_straggler_is_a_band_of_its_own_with_its_legend(tmp_path: Path) -> None:
    from tests.goodput.test_ranks import SLOW, _run
    from torchdoctor.goodput import job_breakdown

    slow = [0.05 if i + 1 in SLOW else 0.01 for i in range(800)]
    whole = job_breakdown({0: _run([0.01] * 800), 1: _run(slow)}, 100.0, 114.0)
    page = write_report(Record(script="train.py", whole_run=whole.to_dict()), tmp_path / "ranks.html")
    expressions = ["[...document.querySelectorAll('#td-whole-run rect.band-straggler title')].map(t => t.textContent)",
                   "[...document.querySelectorAll('#td-whole-run .legend li')].map(li => li.textContent)",
                   "document.querySelectorAll('#whole-run table.ranks tr').length"]
    result = visit(page, tmp_path / "profile", tmp_path / "ranks.png", expressions)
    assert result.console_errors == [] and result.dialogs == [] and result.requests == [page.resolve().as_uri()]
    (band,) = result.results[expressions[0]]
    assert band.startswith("straggler: rank 1, steps 300-399 ")
    assert "a straggling rank" in result.results[expressions[1]] and result.results[expressions[2]] == 3
