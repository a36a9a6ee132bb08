"""`load_result`, what `run --apply` trusts: a tune result is checked against its layout, each
kept value against its knob, and the script against the one it was made for."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from torchdoctor.tune import load_result
from torchdoctor.tune.errors import TuneInputError
from torchdoctor.tune.result import script_sha256


@pytest.fixture()
def script(tmp_path: Path) -> Path:
    path = tmp_path / "train.py"
    path.write_text("print('training')\n")
    return path


def _result(tmp_path: Path, **fields: object) -> Path:
    path = tmp_path / "tune.json"
    path.write_bytes(orjson.dumps({"schema_version": 1, **fields}))
    return path


def test_a_result_made_for_this_script_gives_its_kept_knobs(tmp_path, script):
    path = _result(tmp_path, kept={"num_workers": 2, "threads": 1}, script_sha256=script_sha256(script))
    assert load_result(path, script) == ({"num_workers": 2, "threads": 1}, [])


def test_a_result_made_for_another_script_is_refused_unless_forced(tmp_path, script):
    other = tmp_path / "other.py"
    other.write_text("print('another')\n")
    path = _result(tmp_path, kept={"threads": 1}, script=str(other), script_sha256=script_sha256(other))
    with pytest.raises(TuneInputError, match=r"made for .*other\.py.*--force"):
        load_result(path, script)
    kept, warnings = load_result(path, script, force=True)
    assert kept == {"threads": 1} and "applied anyway (--force)" in warnings[0]


def test_a_result_from_before_the_script_hash_is_applied_with_a_warning(tmp_path, script):
    kept, warnings = load_result(_result(tmp_path, kept={"threads": 1}), script)
    assert kept == {"threads": 1} and "not checked" in warnings[0]


@pytest.mark.parametrize("fields, message", [
    ({"kept": {"threads": 1_000_000_000}}, "threads takes an integer in 1.."),
    ({"kept": {"num_workers": -5}}, "num_workers"),
    ({"kept": {"num_workers": "abc"}}, "num_workers"),
    ({"kept": {"num_workers": 1.5}}, "num_workers"),
    ({"kept": {"threads": 0}}, "threads"),
    ({"kept": {"batch_size": 0}}, "batch_size"),
    ({"kept": ["threads"]}, "`kept` must be an object"),
    ({"kept": None}, "`kept` must be an object"),
    ({"kept": {"warp_drive": True}}, "unknown knob.*warp_drive"),
    ({"kept": {}, "script_sha256": 12}, "script_sha256 must be 64 hex digits"),
    ({"schema_version": 4, "kept": {}}, "not a `torchdoctor tune --json` result"),
    ({}, "not a `torchdoctor tune --json` result"),
])
def test_a_hostile_result_file_is_a_clear_error(tmp_path, script, fields, message):
    with pytest.raises(TuneInputError, match=message):
        load_result(_result(tmp_path, **fields), script)


def test_a_file_that_is_not_json_or_too_large_is_a_clear_error(tmp_path, script, monkeypatch):
    path = tmp_path / "tune.json"
    path.write_text("{not json")
    with pytest.raises(TuneInputError, match="not valid JSON"):
        load_result(path, script)
    monkeypatch.setattr("torchdoctor.tune.result.MAX_RESULT_BYTES", 4)
    with pytest.raises(TuneInputError, match="larger than 4 bytes"):
        load_result(path, script)
    with pytest.raises(TuneInputError, match="cannot read"):
        load_result(tmp_path / "missing.json", script)


def _summary_of(trials: list[dict], search: dict | None = None) -> str:
    from torchdoctor.tune.result import TuneResult, summary_line

    result = TuneResult(tune_id="t", script="s.py", args=[], baseline_step_s=0.005, best_step_s=0.005, speedup=1.0,
                        speedup_ci=None, confirmed=False, metric="time per step", kept={}, rejected=[], overridden=[],
                        intercepted=[], numerics_unchecked=[], trials=trials, stop_reason="", noise={},
                        confirmation=None, search=search or {})
    return summary_line(result)


def test_when_every_trial_is_undecided_the_summary_says_nothing_could_be_decided_the_load_and_how_to_rerun():
    baseline = {"knob": None, "verdict": None}
    noisy = {"knob": "threads", "verdict": {"decided": False}}
    load = {"load": {"text": "other processes kept 1.8 of the 2 cores busy (median of 9 runs)"}}
    summary = _summary_of([baseline, noisy, dict(noisy, knob="compile")], load)
    assert summary.startswith("nothing could be decided: each of the 2 trials was too noisy")
    assert "other processes kept 1.8 of the 2 cores busy" in summary
    assert "--time-budget" in summary and "quieter machine" in summary and "--clock cpu" in summary
    assert "no knob made the script measurably faster" not in summary


def test_when_no_trial_ran_the_summary_says_so_and_why():
    from torchdoctor.tune.result import TuneResult, summary_line

    result = TuneResult(tune_id="t", script="s.py", args=[], baseline_step_s=0.005, best_step_s=0.005, speedup=1.0,
                        speedup_ci=None, confirmed=False, metric="time per step", kept={}, rejected=[], overridden=[],
                        intercepted=[], numerics_unchecked=[], trials=[{"knob": None, "verdict": None}],
                        stop_reason="--time-budget 300 s: no room for another trial and the confirmation", noise={},
                        confirmation=None)
    assert summary_line(result) == ("nothing kept: no knob was tried (--time-budget 300 s: no room for another "
                                    "trial and the confirmation)")


def test_when_some_trial_was_decided_nothing_kept_means_no_knob_was_faster():
    summary = _summary_of([{"knob": None, "verdict": None}, {"knob": "threads", "verdict": {"decided": True}},
                           {"knob": "compile", "verdict": {"decided": False}}])
    assert summary == ("nothing kept: no knob made the script measurably faster side by side "
                       "(1 of 2 trials undecided: too noisy)")
