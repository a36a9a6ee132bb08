"""Per-rank step bars in the HTML report, and the scaling curve page of `torchdoctor scale --html`."""

from __future__ import annotations

import re

from torchdoctor.distributed.analysis import rank_analysis
from torchdoctor.distributed.section import DistributedSection
from torchdoctor.report.distributed_html import rank_bars, scale_html
from torchdoctor.distributed.scale import scaling_document
from torchdoctor.record import Record, Summary
from torchdoctor.report.html import HtmlRenderer


def _distributed():
    ranks = [{"rank": r, "steps": [0.1] * 4, "data_wait_s": [0.0] * 4,
              "summary": Summary(num_steps=4, backward_fraction=f)} for r, f in ((0, 0.9), (1, 0.1))]  # fmt: skip
    return rank_analysis(ranks)


def _section():
    return DistributedSection.from_dict(_distributed())


def test_rank_bars_split_each_step_into_work_and_backward_and_mark_the_straggler():
    bars = rank_bars(_section())
    assert [b["rank"] for b in bars] == [0, 1] and [b["width"] for b in bars] == [1.0, 1.0]
    assert [round(b["work_share"], 3) for b in bars] == [0.1, 0.9]
    assert [b["straggler"] for b in bars] == [False, True]
    assert rank_bars(None) == []


def test_the_report_page_shows_one_bar_per_rank():
    page = HtmlRenderer().render(Record(script="train.py", distributed=_distributed()))
    assert page.count('class="rank-row"') == 2 and "rank 1 (straggler)" in page


def _row(nproc, throughput, reason="completed"):
    return {"nproc": nproc, "throughput_per_s": throughput, "unit": "samples/s", "exit_reason": reason,
            "exit_message": "failed", "distributed": None}


def test_scale_page_draws_measured_and_linear_curves_and_escapes_the_script():
    doc = scaling_document("<b>t.py", [], [_row(1, 100.0), _row(2, 120.0), _row(4, None, "script_error")])
    page = scale_html(doc)
    assert "<b>t.py" not in page and "&lt;b&gt;t.py" in page
    measured = re.search(r'<polyline points="([^"]+)" fill="none" stroke="#3366cc"', page).group(1).split()
    ideal = re.search(r'<polyline points="([^"]+)" fill="none" stroke="#bbb"', page).group(1).split()
    assert len(measured) == 2 and len(ideal) == 3  # the failed size has no point
    # y grows downwards: linear scaling to 4 processes (400/s) is the top of the chart, 120/s lower
    assert float(ideal[-1].split(",")[1]) < float(measured[1].split(",")[1]) < float(measured[0].split(",")[1])
    assert "1.20x" in page and "60%" in page and "at 2 processes the speed-up is 1.20x" in page
