"""The tune report: one summary for console and JSON, and code never wrapped or cropped when the
output is not a terminal (a CI log, a pipe)."""

from __future__ import annotations

import io
from pathlib import Path

from rich.console import Console

from tests.tune.test_search import FakeRuns, _tuner
from torchdoctor.report.tune import render_result

LONG_CALL = ("loader = DataLoader(dataset_with_a_rather_long_name, batch_size=128, shuffle=True, "
             "drop_last=True, collate_fn=collate_batches_of_variable_length)\n")


def test_a_narrow_non_terminal_gets_every_diff_and_code_line_whole(tmp_path: Path, monkeypatch) -> None:
    script = tmp_path / "train.py"
    script.write_text(LONG_CALL + "optimizer.zero_grad()\n")
    tuner = _tuner(tmp_path, monkeypatch, FakeRuns(), only=["zero_grad_set_to_none"], confirm_rounds=2)
    tuner.script = script
    result = tuner.run()
    assert result.kept == {"zero_grad_set_to_none": True}
    out = io.StringIO()
    render_result(result, Console(file=out, width=60, force_terminal=False))
    text = out.getvalue()
    assert "+optimizer.zero_grad(set_to_none=True)\n" in text
    assert result.summary in text  # the same words as the JSON's
    assert "measured: " + result.confirmation["how"] in text
    # the paces are the sides' median runs, the paired speed-up is not their quotient: the line says so
    assert "each side's median run; the speed-up is the rounds' median ratio, not their quotient" in text
    for line in result.diff.splitlines():
        assert line in text.splitlines()


def test_a_claim_for_another_value_than_the_one_tried_is_shown_with_the_claim_for_the_trial() -> None:
    from types import SimpleNamespace

    from torchdoctor.report.tune import _render_claims

    row = {"id": "TD-DATA-007", "title": "loading waits on storage", "knob": "num_workers", "claimed_upside": 0.936,
           "claimed_speedup": 15.65, "claimed_speedup_for_trial": 6.22, "assessment": "agrees", "reason": None,
           "trial": 1, "value": 6, "tried_on": {}, "measured_speedup": 6.6, "measured_speedup_ci": [5.9, 7.1],
           "measured_verdict": "faster", "status": "kept"}
    out = io.StringIO()
    _render_claims(SimpleNamespace(findings=[row]), Console(file=out, width=200, force_terminal=False))
    assert "x15.65 (x6.22 for num_workers=6)" in out.getvalue()
    out = io.StringIO()
    _render_claims(SimpleNamespace(findings=[{**row, "claimed_speedup_for_trial": 15.65, "value": 27}]),
                   Console(file=out, width=200, force_terminal=False))
    assert "x15.65" in out.getvalue() and "for num_workers" not in out.getvalue()
