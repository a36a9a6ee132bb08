"""The whole run's timeline in the HTML report: step time and memory on the run's clock, with the
badput bands (start-up, each slow step named by its cause, the end); absent without a whole run;
names from the script stay escaped text."""

from __future__ import annotations

import pytest

from tests.goodput.test_breakdown import Stream
from tests.report.conftest import HOSTILE
from torchdoctor.record import Record
from torchdoctor.report.html import HtmlRenderer
from torchdoctor.report.whole_run_html import whole_run_view

CAUSE = "save_checkpoint (train.py:212)"


def whole_run_record(tmp_path) -> Record:
    """A run of 600 steps of 1 ms with a 0.1 s checkpoint every 50 steps and 1 MiB more memory a
    step, broken down as `torchdoctor watch` does."""
    durations = [0.101 if (i + 1) % 50 == 0 else 0.001 for i in range(600)]
    stream = Stream(durations)
    for i, d in enumerate(durations):
        stream.sample(i + 1, 1 if d > 0.01 else 0, times=2 if d > 0.01 else 1)
    stream.lines += [{"mem": [step, step * 1000, 2**30 + step * 2**20, None]} for step in range(20, 600, 20)]
    stream.end()
    return Record(script="train.py", whole_run=stream.write(tmp_path / "w.jsonl").to_dict())


def test_each_checkpoint_is_a_band_on_the_runs_clock_named_by_its_cause(tmp_path):
    view = whole_run_view(whole_run_record(tmp_path))
    assert view is not None
    checkpoints = [b for b in view["bands"] if CAUSE in b["label"]]
    assert len(checkpoints) == 12 and all(b["kind"] == "slow" for b in checkpoints)
    assert all(b["end_s"] - b["start_s"] == pytest.approx(0.101, abs=1e-3) for b in checkpoints)
    assert checkpoints[0]["label"].startswith("step 50: ")
    first, last = view["bands"][0], view["bands"][-1]
    assert (first["kind"], first["start_s"]) == ("startup", 0.0) and first["end_s"] == pytest.approx(2.5, abs=1e-3)
    assert last["kind"] == "end" and last["end_s"] == view["wall_s"]
    assert len(view["t_s"]) == len(view["step_s"]) > 0 and len(view["memory_t_s"]) == len(view["memory_bytes"]) > 0


def test_a_record_without_a_whole_run_has_no_timeline_section():
    assert whole_run_view(Record()) is None
    assert 'id="whole-run"' not in HtmlRenderer().render(Record())


def test_the_page_holds_the_section_and_a_hostile_cause_only_escaped(tmp_path):
    record = whole_run_record(tmp_path)
    for part in record.whole_run["parts"]:
        if part["cause"] == CAUSE:
            part["cause"] = HOSTILE
    page = HtmlRenderer().render(record)
    assert 'id="td-whole-run"' in page and 'id="td-whole-run-data"' in page
    assert HOSTILE not in page and "\\u003c/script\\u003e\\u003cimg" in page


def test_a_torchrun_job_shows_each_ranks_goodput_and_each_straggler_as_a_band():
    from tests.goodput.test_ranks import SLOW, _run
    from torchdoctor.goodput import job_breakdown

    even, slow = [0.01] * 800, [0.05 if i + 1 in SLOW else 0.01 for i in range(800)]
    whole = job_breakdown({0: _run(even), 1: _run(slow)}, 100.0, 114.0)
    view = whole_run_view(Record(script="train.py", whole_run=whole.to_dict()))
    assert [row[:2] for row in view["ranks"]] == [["0", "801"], ["1", "801"]]
    (band,) = [b for b in view["bands"] if b["kind"] == "straggler"]
    (words,) = view["stragglers"]
    assert band["label"] == words and words.startswith("straggler: rank 1, steps ")
    assert band["start_s"] == whole.stragglers[0].start_s and band["end_s"] == whole.stragglers[0].end_s
    page = HtmlRenderer().render(Record(script="train.py", whole_run=whole.to_dict()))
    assert "Goodput by rank" in page and "<td>801</td>" in page and words.replace("'", "&#39;") in page
    single = whole_run_view(Record(script="train.py", whole_run=job_breakdown({0: _run(even)}, 100.0, 114.0).to_dict()))
    assert single["ranks"] == [] and single["stragglers"] == []
