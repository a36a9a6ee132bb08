"""The speed-of-light accounting as people read it: MFU and a waterfall whose shares add up to 100%,
unexplained slices with their operators and the script's line, a report without findings that says
what was checked, all at 80 columns, and operator names escaped in HTML."""

from __future__ import annotations

from io import StringIO

from rich.console import Console

from tests.accounting.test_build import _costs, _op, _record
from torchdoctor.accounting import account_record
from torchdoctor.record import StepSample
from torchdoctor.report.console import breakdown_table, render_record
from torchdoctor.report.format import fmt_shares
from torchdoctor.report.html import HtmlRenderer


def _text(renderable_of) -> str:
    console = Console(file=StringIO(), width=80, color_system=None, record=True)
    renderable_of(console)
    return console.export_text()


def _diagnosed(ops: list[dict], by_kind: dict[str, float]):
    record = _record(_costs(ops, by_kind))
    record.accounting = account_record(record).to_dict()
    record.summary.num_steps = len(record.steps)
    return record


def test_shares_are_rounded_to_add_up_to_their_whole():
    assert fmt_shares([1 / 3] * 3) == ["33.4%", "33.3%", "33.3%"]
    assert sum(float(s[:-1]) for s in fmt_shares([0.1234, 0.3456, 0.531])) == 100.0


def test_a_breakdown_whose_part_medians_overshoot_the_median_step_still_adds_up_to_100_percent():
    steps = [StepSample(index=i, wall_s=w, forward_s=f, backward_s=b)
             for i, (w, f, b) in enumerate([(1.0, 0.6, 0.39), (1.0, 0.4, 0.59), (1.2, 0.61, 0.6)])]
    record = _record(None)
    record.steps = steps
    text = _text(lambda c: c.print(breakdown_table(record)))
    shares = [float(cell.strip()[:-1]) for line in text.splitlines() for cell in line.split("│")[2:3]
              if cell.strip().endswith("%")]
    assert round(sum(shares), 1) == 100.0


def test_the_waterfall_names_its_unexplained_slice_with_the_operator_and_its_line_at_80_columns():
    record = _diagnosed([_op("aten::add", 0.075, moved=1e6)], {"memory": 0.075})
    text = _text(lambda c: render_record(record, c))
    assert "MFU" in text and "Speed of light" in text
    assert "unexplained: memory-bound operators" in text and "at train.py:12 (forward)" in text
    assert max(len(line) for line in text.splitlines()) <= 80


def test_a_report_without_findings_says_what_was_checked_and_how_near_its_speed_of_light_each_cost_runs():
    record = _diagnosed([_op("aten::mm", 0.075, flops=0.075 * 50e9 * 0.7)], {"compute": 0.075})
    text = _text(lambda c: render_record(record, c))
    assert "rules checked, none found a bottleneck" in text and "unexplained" not in text
    assert "compute-bound at 70% of this machine's fp32 peak: healthy" in " ".join(text.split())


def test_operator_names_from_a_record_are_escaped_in_html():
    record = _diagnosed([_op("<script>alert(1)</script>", 0.075, moved=1e6)], {"memory": 0.075})
    html = HtmlRenderer().render(record)
    assert "<script>alert(1)" not in html and "&lt;script&gt;alert(1)" in html
    assert 'id="accounting"' in html
