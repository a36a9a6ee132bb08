"""TD-COMP-026: checkpoints saved inside the steps, from torch.save's measured time."""

from __future__ import annotations

from pathlib import Path

import pytest

from torchdoctor.record import Record
from torchdoctor.rules import diagnose

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "TD-COMP-026"


def _findings(name: str, torch: str | None = None):
    record = Record.load(FIXTURES / name)
    if torch:
        record.env["versions"] = {"torch": torch}
    return diagnose(record, select=["TD-COMP-026"]).findings


def test_saves_that_stall_every_fourth_step_are_a_finding_naming_the_stalled_steps() -> None:
    (finding,) = _findings("fires.json", "2.5.0")
    assert finding.severity == "problem" and finding.upside == pytest.approx(1.5 / 2.7, abs=1e-3)  # of the 2.7 s window
    assert finding.evidence["stalled_steps"] == [3, 7, 11] and finding.evidence["save_calls"] == 3
    assert "async_save" in finding.fix.code and "needs torch" not in finding.fix.text


def test_on_a_torch_without_async_save_the_fix_says_which_it_needs() -> None:
    (finding,) = _findings("fires.json", "2.1.2")
    assert "needs torch >= 2.4; this run was recorded with torch 2.1" in finding.fix.text
    assert "async_save" not in finding.fix.code and "rank == 0" in finding.fix.code


def test_a_rare_quick_save_is_silent() -> None:
    assert _findings("silent.json") == []


def test_the_time_inside_torch_save_is_not_also_called_work_outside_the_model() -> None:
    record = Record.load(FIXTURES / "fires.json")  # 56% outside the phases, 1.5 s of the 2.7 s window saving
    ids = [f.id for f in diagnose(record, select=["TD-COMP-013", "TD-COMP-026"]).findings]
    assert ids == ["TD-COMP-026"]
    record.env["script_tools"]["save_s"] = 0.2  # a smaller share saving leaves the rest to TD-COMP-013
    assert {f.id for f in diagnose(record, select=["TD-COMP-013", "TD-COMP-026"]).findings} == {"TD-COMP-013",
                                                                                              "TD-COMP-026"}


def test_saves_the_whole_run_shows_as_periodic_stalls_are_one_finding_over_the_run(tmp_path: Path) -> None:
    from tests.rules.test_whole_run import _checkpoints_and_a_leak

    record = Record.load(FIXTURES / "fires.json")
    stream = _checkpoints_and_a_leak()
    stream.end()
    record.whole_run = stream.write(tmp_path / "w.jsonl").to_dict()
    record = Record.load(record.save(tmp_path / "record.json"))
    assert [f.id for f in diagnose(record, select=["TD-COMP-026", "TD-COMP-030"]).findings] == ["TD-COMP-030"]
