"""The HTML renderer's page, read as text: escaping, sections, ranking and no outside references."""

from __future__ import annotations

import re

import orjson

from tests.report.conftest import HOSTILE, hostile_finding
from torchdoctor.record import Record, StepSample, Summary
from torchdoctor.report.html import HtmlRenderer, script_json


def _record(**changes) -> Record:
    op = {"name": HOSTILE, "count": 2, "self_us": 50.0, "mean_self_us": 25.0}
    trace = {"ranks": [{"steps_count": 1, "host": {"top_by_self_time": [op]}, "breakdown_us": {"cpu_exec_us": 90.0, "other_us": 10.0}}],
             "timeline": {"step": 1, "wall_us": 100.0, "span_us": 100.0, "lanes": [{"label": HOSTILE}],
                          "events": [{"lane": 0, "name": HOSTILE, "kind": "cpu_op", "start_us": 0, "dur_us": 50, "depth": 0}],
                          "events_count": 1, "dropped_count": 0}}  # fmt: skip
    record = Record(script=f"/tmp/{HOSTILE}.py", argv=[HOSTILE], steps=[StepSample(0, 0.01, forward_s=0.004)],
                    summary=Summary(num_steps=1, step_s=0.01, forward_fraction=0.4, other_fraction=0.6),
                    trace=trace, env={"versions": {"torch": HOSTILE}}, warnings=[HOSTILE])  # fmt: skip
    for key, value in changes.items():
        setattr(record, key, value)
    return record


def test_embedded_json_has_no_angle_brackets_or_ampersands_and_parses_back() -> None:
    value = {"name": HOSTILE + " & \u2028", "n": [1.5, None]}
    text = str(script_json(value))
    assert not set("<>&\u2028") & set(text)
    assert orjson.loads(text) == value


def test_every_hostile_string_is_escaped_in_the_page() -> None:
    page = HtmlRenderer().render(_record(findings=[hostile_finding()]))
    assert "<img" not in page
    assert page.count("</script>") == 2  # closes the two script elements, nothing else
    assert page.count("&lt;img src=x onerror=alert(1)&gt;") >= 8  # ops, finding, env, warning, script, argv


def test_the_page_references_nothing_outside_itself() -> None:
    page = HtmlRenderer().render(_record(findings=[hostile_finding()], memory={"peak_bytes": 1}))
    urls = set(re.findall(r"(?:https?:)?//[\w.-]+\.\w+[^\s\"')]*", page))
    assert urls <= {"http://www.w3.org/2000/svg"}  # the SVG namespace name, which is never fetched
    assert "default-src 'none'" in page


def test_findings_are_shown_largest_upside_first() -> None:
    findings = [hostile_finding(0.1, "TD-SMALL"), hostile_finding(0.7, "TD-BIG")]
    page = HtmlRenderer().render(_record(findings=findings))
    assert page.index("TD-BIG") < page.index("TD-SMALL")
    assert ">70%<" in page and ">10%<" in page


def test_the_memory_section_appears_only_when_the_record_has_memory() -> None:
    assert 'id="td-memory"' not in HtmlRenderer().render(_record())
    assert 'id="td-memory"' in HtmlRenderer().render(_record(memory={"timeline": {"t_s": [0, 1], "series": {"a": [1, 2]}}}))


def test_a_record_without_steps_trace_or_findings_still_renders() -> None:
    page = HtmlRenderer().render(Record(kind="traces"))
    assert "No steps were measured" in page and "No findings" in page and "No profiler trace" in page


def test_rank_timelines_alone_get_the_timeline_section() -> None:
    record = _record()
    timeline = record.trace.pop("timeline")
    record.trace["rank_timelines"] = [timeline, timeline]
    assert 'id="td-timeline"' in HtmlRenderer().render(record)


def test_a_busy_machine_is_a_caveat_above_the_figures() -> None:
    from tests.analyse.test_caveats import loaded_run

    page = HtmlRenderer().render(loaded_run(100.0))
    assert page.index('id="caveats"') < page.index('class="figures"')
    assert "other processes used 1.1 of the machine&#39;s 2 cores (55%)" in page
    assert 'id="caveats"' not in HtmlRenderer().render(loaded_run(48.0))
