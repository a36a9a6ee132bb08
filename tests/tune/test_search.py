"""The search, with the subprocess replaced by fabricated runs (the real ones are covered by
test_tune_cli.py and test_robustness.py): which knob is tried when, how each is judged side by
side, how a disturbed run is left out, the confirmation, the budget and the stop reasons."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Callable

import pytest

from torchdoctor.knobs import REGISTRY
from torchdoctor.record import Record, StepSample, Summary
from torchdoctor.store import RunStore
from torchdoctor.knobs import Knob
from torchdoctor.tune import Tuner, runner, search, tuner
from torchdoctor.tune.config import TuneConfig
from torchdoctor.tune.errors import BudgetTooShortError
from torchdoctor.tune.confirmation_report import rounds_for_precision
from torchdoctor.tune.runner import Runner, TuneSetup
from torchdoctor.tune.state import TuneState
from torchdoctor.tune.trial import ACCEPTED, INTERRUPTED, KEPT, REJECTED, Run, RunRequest, Trial

KNOBS = ["no_anomaly_detection", "channels_last", "zero_grad_set_to_none", "compile"]
#: Step time factor of each knob (1.0: no effect).
EFFECT = {"zero_grad_set_to_none": 0.5}


class FakeRuns:
    """Fabricated runs: step time 0.1 s x each applied knob's EFFECT, times `slow(n)` for the
    n-th run (a disturbance), loss 1.0 unless `loss(knobs)` says otherwise; steps detected from
    `detection` (the Record's step_detection). `steps_only` lists how each run was asked to be observed."""

    def __init__(self, slow: Callable[[int, dict[str, Any]], float] = lambda n, knobs: 1.0,
                 interrupt_at: int | None = None,
                 loss: Callable[[dict[str, Any]], float | None] = lambda knobs: 1.0, duration_s: float = 1.0,
                 detection: str | None = None) -> None:
        self.slow, self.interrupt_at, self.loss, self.duration_s = slow, interrupt_at, loss, duration_s
        self.detection = detection
        self.calls: list[tuple[dict[str, Any], str]] = []
        self.steps_only: list[bool] = []

    def __call__(self, script: Path, args: Any, config: TuneConfig, request: RunRequest) -> Run:
        knobs, role, steps_only = request.knobs, request.role, request.steps_only
        n = len(self.calls)
        self.calls.append((dict(knobs), role))
        self.steps_only.append(steps_only)
        step_s = 0.1 * math.prod(EFFECT.get(k, 1.0) for k in knobs) * self.slow(n, knobs)
        count = request.timing_steps or config.timing_steps
        steps = [StepSample(index=i, wall_s=step_s * (1 + 0.01 * math.sin(i + 3 * n)), backward_s=0.01, batch_size=8,
                            loss=self.loss(knobs)) for i in range(count)]
        record = Record(steps=steps, summary=Summary(num_steps=count, step_s=step_s),
                        env={"torch": {"anomaly_detection": True}, "cpu": {"logical_cores": 2},
                             "optimizers": [{"class": "SGD", "module": "torch.optim.sgd"}],
                             "models": [{"class": "Net", "module_types": {"Conv2d": 1}}]},
                        step_detection=self.detection)
        failure = (INTERRUPTED, "interrupted (Ctrl-C)") if n == self.interrupt_at else None
        return Run(knobs=dict(knobs), role=role, run_id=f"run{n}", step_s=step_s, duration_s=self.duration_s,
                   record=record, failure=failure, timing_steps=count, steps_only=steps_only)


def _tuner(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, runs: FakeRuns, **options: Any) -> Tuner:
    monkeypatch.setattr(runner, "observe_run", runs)
    config = TuneConfig(**{"only": KNOBS, "patience": 10, "confirm_span_s": 0.0, **options})
    return Tuner(tmp_path / "train.py", [], config, store=RunStore(tmp_path / "runs.db"), work_dir=tmp_path)


def test_the_second_pass_retries_only_knobs_tried_before_the_last_kept_one(tmp_path, monkeypatch) -> None:
    result = _tuner(tmp_path, monkeypatch, FakeRuns(), repeat_baseline=False).run()
    assert result.kept == {"zero_grad_set_to_none": True}
    tried = [t["knob"] for t in result.trials]
    # Pass 1: all four; compile was already tried on top of zero_grad_set_to_none, so pass 2
    # retries only the two knobs rejected before it was kept.
    assert tried == [None, *KNOBS, "no_anomaly_detection", "channels_last"]
    assert [t["knobs"] for t in result.trials[-2:]] == [
        {"zero_grad_set_to_none": True, "no_anomaly_detection": True},
        {"zero_grad_set_to_none": True, "channels_last": True}]


def test_each_value_is_judged_beside_runs_of_the_best_configuration_a_b_b_a(tmp_path, monkeypatch) -> None:
    runs = FakeRuns()
    result = _tuner(tmp_path, monkeypatch, runs, only=["zero_grad_set_to_none"], confirm_rounds=2).run()
    roles = [role for _, role in runs.calls]
    # baseline, repeat (reused as the trial's first A), B B A; the confirmation reuses that last
    # run of the unmodified script as its first A: B B A.
    assert roles == ["baseline", "baseline", "candidate", "candidate", "reference",
                     "confirm-best", "confirm-best", "confirm-baseline"]
    trial = result.trials[1]
    assert [r["role"] for r in trial["reference"]] == ["baseline", "reference"]
    assert trial["status"] == "kept" and "side by side" in trial["reason"]
    assert result.confirmed and result.confirmation["status"] == "confirmed"
    assert 1.9 < result.speedup < 2.1
    assert result.speedup_ci[0] <= result.speedup <= result.speedup_ci[1]
    low, high = result.confirmation["verdict"]["ci_across_runs"]  # the rounds' scatter in, not the steps' alone
    assert result.speedup_ci == pytest.approx([1 / high, 1 / low])
    assert "confirmed side by side over 2 interleaved rounds" in result.summary


def test_a_trials_reason_gives_the_interval_it_was_decided_on_and_the_wider_one_across_its_runs(
        tmp_path, monkeypatch) -> None:
    # Runs 4-8% apart, their steps within 1%: the steps' CI is narrow, the interval across two
    # rounds (Student's t for one degree of freedom) wide. Printed alone, the second read "kept,
    # faster: x1.10 (95% CI x0.83-x1.46)" (tune_zoo).
    runs = FakeRuns(slow=lambda n, knobs: (1.0, 1.08, 0.96, 1.04)[n % 4])
    result = _tuner(tmp_path, monkeypatch, runs, only=["zero_grad_set_to_none"], confirm_rounds=2).run()
    trial = result.trials[1]
    assert trial["status"] == "kept"
    steps_low, steps_high = (1 / trial["verdict"][k] for k in ("ci_high", "ci_low"))
    across_low, across_high = (1 / v for v in reversed(trial["verdict"]["ci_across_runs"]))
    assert across_low < steps_low < steps_high < across_high
    assert (f"the steps' 95% CI x{steps_low:.2f}-x{steps_high:.2f}, noise floor "
            f"{trial['verdict']['noise_floor']:.0%}; across its 2+2 runs x{across_low:.2f}-x{across_high:.2f}"
            in trial["reason"])


def test_a_disturbed_first_baseline_is_re_measured_and_never_divided_by(tmp_path, monkeypatch) -> None:
    runs = FakeRuns(slow=lambda n, knobs: 10.0 if n == 0 else 1.0)  # another process during the first run
    result = _tuner(tmp_path, monkeypatch, runs, only=["zero_grad_set_to_none"]).run()
    baseline_runs = result.trials[0]["runs"]
    assert len(baseline_runs) == 3 and baseline_runs[0]["disturbed"]  # re-measured until two agree
    assert result.noise["disturbed_runs"] == 1
    assert 1.9 < result.speedup < 2.1  # x2, not x20
    assert result.baseline_step_s == pytest.approx(0.1, rel=0.05)
    # Its diagnosis timed the disturbance: the script is profiled and diagnosed again before the search.
    assert result.search["rediagnosed"]
    assert [role for _, role in runs.calls[:4]] == ["baseline"] * 4 and runs.calls[4][1] != "baseline"


def test_a_first_baseline_run_only_somewhat_slower_keeps_its_diagnosis(tmp_path, monkeypatch) -> None:
    # 30% slower: outside the runs' 15% tolerance (disturbed, re-measured), but its diagnosis's
    # shares and counts are the others': it is not profiled again (10x slower above: it is).
    runs = FakeRuns(slow=lambda n, knobs: 1.3 if n == 0 else 1.0)
    result = _tuner(tmp_path, monkeypatch, runs, only=["zero_grad_set_to_none"]).run()
    assert result.trials[0]["runs"][0]["disturbed"] and not result.search["rediagnosed"]
    assert [role for _, role in runs.calls[:4]] == ["baseline"] * 3 + ["candidate"]


def test_a_machine_too_noisy_to_decide_keeps_nothing_and_says_so(tmp_path, monkeypatch) -> None:
    # Runs of one configuration differ up to x4, no two within 15%: the knob's x1.25 drowns in it.
    factors = [1.0, 2.2, 1.5, 3.1, 3.6, 1.1, 2.7, 4.4, 1.8, 2.4, 1.3, 4.0, 3.3, 2.0, 1.6, 2.9, 3.8, 1.2, 4.2, 2.5]
    runs = FakeRuns(slow=lambda n, knobs: factors[n % len(factors)])
    monkeypatch.setitem(EFFECT, "zero_grad_set_to_none", 0.8)
    result = _tuner(tmp_path, monkeypatch, runs, only=["zero_grad_set_to_none"]).run()
    assert result.kept == {} and not result.confirmed
    assert result.stop_reason.startswith("the machine is too noisy to decide anything")
    assert "100 ms, 220 ms, 150 ms, 310 ms" in result.stop_reason
    assert result.summary.startswith("nothing kept: the machine is too noisy")
    assert "Rerun on a quieter machine, or with more rounds per trial (--rounds 3)" in result.summary
    assert all(t["status"] == "rejected" and "undecided" in t["reason"] for t in result.trials[1:])


def test_an_effect_larger_than_the_noise_is_still_decided_when_runs_disagree(tmp_path, monkeypatch) -> None:
    # Runs of one configuration differ by up to 40% (never two within 15%), the knob halves the
    # step: every candidate run beats every reference run, so the noise does not end the search.
    # n: 0 baseline; trial: A (run 0 reused), B 1, B 2, A 3, then A 4, B 5; the confirmation alike.
    factors = [1.0, 1.0, 1.3, 1.3, 1.7, 1.7]
    runs = FakeRuns(slow=lambda n, knobs: factors[n % len(factors)])
    result = _tuner(tmp_path, monkeypatch, runs, only=["zero_grad_set_to_none"], confirm_rounds=2,
                    repeat_baseline=False).run()
    trial = result.trials[1]
    assert trial["status"] == "kept" and trial["verdict"]["separated"], trial["reason"]
    assert "every one of" in trial["reason"]
    assert result.confirmed


def test_a_candidate_run_disturbed_once_is_re_measured_before_deciding(tmp_path, monkeypatch) -> None:
    runs = FakeRuns(slow=lambda n, knobs: 5.0 if n == 2 else 1.0)  # the candidate's first run
    result = _tuner(tmp_path, monkeypatch, runs, only=["zero_grad_set_to_none"]).run()
    trial = result.trials[1]
    assert len(trial["runs"]) == 3 and trial["runs"][0]["disturbed"]
    assert trial["status"] == "kept"


def test_ctrl_c_during_the_confirmation_reports_the_result_as_unconfirmed(tmp_path, monkeypatch) -> None:
    runs = FakeRuns(interrupt_at=6)  # baseline, repeat, B, B, A, then the confirmation's second run
    result = _tuner(tmp_path, monkeypatch, runs, only=["zero_grad_set_to_none"]).run()
    assert result.kept == {"zero_grad_set_to_none": True}
    assert not result.confirmed and result.speedup_ci is None
    assert result.confirmation["status"] == "unconfirmed"
    assert "UNCONFIRMED" in result.summary and "interrupted (Ctrl-C)" in result.stop_reason
    assert result.exit_status == 130  # interrupted is not success, even with a result to report
    assert 1.9 < result.speedup < 2.1  # the estimate
    confirmation = result.confirmation  # the span of the runs it had: 1 s each, the interrupted one not counted
    assert confirmation["baseline_runs"] and confirmation["span_s"] == len(
        confirmation["baseline_runs"] + confirmation["best_runs"]) * 1.0


def test_ctrl_c_between_two_rounds_of_the_confirmation_estimates_from_the_whole_rounds(tmp_path, monkeypatch) -> None:
    # The confirmation ran A B B (its A the trial's last run, run 4), then its fourth run (A) was
    # interrupted: one whole round and the second B alone; the estimate is that round's ratio.
    runs = FakeRuns(interrupt_at=7)
    result = _tuner(tmp_path, monkeypatch, runs, only=["zero_grad_set_to_none"]).run()
    assert result.confirmation["status"] == "unconfirmed"
    assert "the confirmation's 1+1 runs so far" in result.confirmation["reason"]
    assert len(result.confirmation["best_runs"]) == 1 and 1.9 < result.speedup < 2.1


def test_a_kept_set_the_confirmation_finds_no_faster_is_dropped(tmp_path, monkeypatch) -> None:
    # Fast only while searching: in the confirmation the configuration runs at baseline speed.
    runs = FakeRuns(slow=lambda n, knobs: 2.0 if n >= 5 and knobs else 1.0)
    result = _tuner(tmp_path, monkeypatch, runs, only=["zero_grad_set_to_none"], confirm_rounds=2).run()
    assert result.kept == {} and result.confirmation["status"] in ("not faster", "too noisy")
    assert result.trials[1]["status"] == "rejected" and "not confirmed" in result.trials[1]["reason"]
    assert result.summary.startswith("nothing kept")


def _confirmation_scatter(scatter: float) -> Callable[[int, dict[str, Any]], float]:
    """Runs of the confirmation (from the 6th on) scattered by +-`scatter` from run to run."""
    return lambda n, knobs: 1.0 + scatter * math.sin(7 * n) if n >= 5 else 1.0


def test_the_confirmation_adds_rounds_until_the_speed_up_is_precise(tmp_path, monkeypatch) -> None:
    quiet = _tuner(tmp_path / "quiet", monkeypatch, FakeRuns(slow=_confirmation_scatter(0.005)),
                   only=["zero_grad_set_to_none"]).run()
    assert quiet.confirmation["rounds"] == 3 and quiet.confirmation["precise"]  # --confirm-rounds was enough
    # the speed-up is the rounds' (each baseline run over the kept-knobs run next to it), and it says so
    assert quiet.confirmation["verdict"]["paired"] and "the median of the rounds' ratios" in quiet.confirmation["how"]
    noisy = _tuner(tmp_path / "noisy", monkeypatch, FakeRuns(slow=_confirmation_scatter(0.12)),
                   only=["zero_grad_set_to_none"], confirm_max_rounds=6).run()
    # Runs up to 12% apart, the rounds' ratios (each A run over the B run next to it) 3-7% apart: the
    # median of three is not within 5%; rounds are added up to the most.
    assert noisy.confirmation["rounds"] == 6 and not noisy.confirmation["precise"]
    assert noisy.confirmed and 1.8 < noisy.speedup < 2.2
    assert noisy.confirmation["half_width"] > 0.05 and "wider than the 5% aimed at" in noisy.confirmation["reason"]
    # ... and it says what stopped it and, at the scatter seen, about how many rounds would reach 5%
    needed = noisy.confirmation["rounds_for_precision"]
    assert needed == rounds_for_precision(6, noisy.confirmation["half_width"], 0.05) and needed > 6
    assert "its 6 rounds were the most allowed (--confirm-max-rounds)" in noisy.confirmation["reason"]
    assert f"about {needed} rounds (~" in noisy.confirmation["reason"]
    assert quiet.confirmation["rounds_for_precision"] is None


def test_rounds_in_which_the_kept_knobs_gained_far_less_are_named_beside_the_confirmed_speed_up(
        tmp_path, monkeypatch) -> None:
    # Two of eight confirmation rounds find the kept knobs' run 40% slower (the second core busy, as
    # two threads on a shared 2-core machine meet it): the median round's x2.00 stands, and the
    # result says the speed-up depends on the machine's state.
    confirming_best = {"runs": 0}
    def slow(n: int, knobs: dict[str, Any]) -> float:
        if n < 5 or not knobs:  # the baseline, its repeat and the trial: undisturbed
            return 1.0
        confirming_best["runs"] += 1
        return 1.4 if confirming_best["runs"] in (3, 6) else 1.0
    result = _tuner(tmp_path, monkeypatch, FakeRuns(slow=slow), only=["zero_grad_set_to_none"], confirm_rounds=8,
                    confirm_max_rounds=8).run()
    confirmation = result.confirmation
    assert result.confirmed and result.speedup == pytest.approx(2.0, rel=0.03)
    assert [r["speedup"] for r in confirmation["lagging_rounds"]] == pytest.approx([2.0 / 1.4] * 2, rel=0.03)
    assert "in 2 of 8 rounds the kept knobs gained only x1.43, x1.43: the speed-up depends on the machine's state" \
        in confirmation["reason"]
    quiet = _tuner(tmp_path / "quiet", monkeypatch, FakeRuns(), only=["zero_grad_set_to_none"], confirm_rounds=8,
                   confirm_max_rounds=8).run()
    assert quiet.confirmation["lagging_rounds"] == [] and "rounds the kept knobs gained only" not in \
        quiet.confirmation["reason"]


def test_each_side_of_the_confirmation_is_timed_for_at_least_its_window(tmp_path, monkeypatch) -> None:
    """Baseline steps of 0.1 s and kept-knob steps of 0.05 s, a 6 s window: 60 and 120 timed steps
    in the confirmation. The trials time the baseline's window (60 steps) on both sides, as do the
    baseline's repeats (the numerics' reference): a trial measures a short step as the confirmation
    does, and the trial's last run of the unmodified script is the confirmation's first."""
    runs = FakeRuns()
    result = _tuner(tmp_path, monkeypatch, runs, only=["zero_grad_set_to_none"], confirm_window_s=6.0).run()
    confirmation = result.confirmation
    assert result.confirmed and 1.9 < result.speedup < 2.1
    assert [r["timed_steps"] for r in confirmation["baseline_runs"]] == [60] * len(confirmation["baseline_runs"])
    assert [r["timed_steps"] for r in confirmation["best_runs"]] == [120] * len(confirmation["best_runs"])
    assert "60 timed steps a baseline run and 120 a kept-knobs run (at least 6 s of steps" in confirmation["how"]
    baseline, trial = result.trials[0], result.trials[1]
    # The profiled first run, then two of the window: the script's noise compares runs of one window.
    assert [r["timed_steps"] for r in baseline["runs"]] == [30, 60, 60]
    assert {r["timed_steps"] for r in trial["runs"] + trial["reference"]} == {60}
    assert [r["role"] for r in confirmation["baseline_runs"]][1:] == ["confirm-baseline"] * (
        len(confirmation["baseline_runs"]) - 1)
    assert {r["role"] for r in confirmation["best_runs"]} == {"confirm-best"}


def test_without_a_repeated_baseline_the_trials_time_the_configured_steps(tmp_path, monkeypatch) -> None:
    """No baseline run times a longer window then: the numerics (losses and outputs sampled after the
    window) could not be compared step for step, so the trials keep `timing_steps`."""
    result = _tuner(tmp_path, monkeypatch, FakeRuns(), only=["zero_grad_set_to_none"], confirm_window_s=6.0,
                    repeat_baseline=False).run()
    trial = result.trials[1]
    assert {r["timed_steps"] for r in trial["runs"] + trial["reference"]} == {30}
    assert trial["numerics"]["ok"] and result.confirmed


def test_the_confirmation_goes_on_until_its_runs_span_the_time_asked(tmp_path, monkeypatch) -> None:
    """Runs of 5 s that agree within 1%: precise after the 3 rounds asked (30 s of runs); with
    `confirm_span_s` 40 a fourth round runs, so that the claim covers 40 s of the machine's moves."""
    quick = _tuner(tmp_path / "quick", monkeypatch, FakeRuns(duration_s=5.0), only=["zero_grad_set_to_none"]).run()
    spanned = _tuner(tmp_path / "spanned", monkeypatch, FakeRuns(duration_s=5.0), only=["zero_grad_set_to_none"],
                     confirm_span_s=40.0).run()
    assert quick.confirmation["rounds"] == 3 and quick.confirmation["span_s"] == 30.0
    assert spanned.confirmed and spanned.confirmation["rounds"] == 4 and spanned.confirmation["span_s"] == 40.0
    assert "the runs lasted 40 s in all" in spanned.confirmation["how"]


@pytest.mark.parametrize("detection, per_sample, steps_only", [
    ("optimizer", False, True), ("marker", False, True), ("forward", False, False), ("optimizer", True, False)])
def test_the_confirmation_is_timed_by_the_step_hooks_alone_where_they_find_the_steps(
        tmp_path, monkeypatch, detection, per_sample, steps_only) -> None:
    """Only step times decide a confirmation, so its runs carry no other hook's cost, where the
    steps are an optimizer's or the script's markers and the speed-up is per step (per sample,
    the batch sizes come from the DataLoader's hook). The trials keep every hook (losses, outputs)."""
    if per_sample:
        monkeypatch.setattr(REGISTRY["zero_grad_set_to_none"], "per_sample", True)
    runs = FakeRuns(detection=detection)
    result = _tuner(tmp_path, monkeypatch, runs, only=["zero_grad_set_to_none"]).run()
    confirming = [only for (_, role), only in zip(runs.calls, runs.steps_only) if role.startswith("confirm")]
    assert result.confirmed and confirming and set(confirming) == {steps_only}
    assert not any(only for (_, role), only in zip(runs.calls, runs.steps_only) if not role.startswith("confirm"))
    assert result.confirmation["steps_only"] is steps_only
    assert ("timed by the step hooks alone" in result.confirmation["how"]) is steps_only
    # A run observed with every hook is never reused as one of the confirmation's: all its runs are its own.
    assert len(confirming) == 2 * result.confirmation["rounds"] or not steps_only


def test_the_budget_keeps_room_for_the_confirmations_span(tmp_path, monkeypatch) -> None:
    """Four knobs of 10 s runs in a 200 s budget with a 100 s span: the search leaves the
    confirmation its 100 s instead of spending them on more trials."""
    runs = FakeRuns(duration_s=10.0)
    result = _tuner(tmp_path, monkeypatch, runs, time_budget_s=200.0, confirm_span_s=100.0).run()
    assert result.confirmed and result.confirmation["span_s"] >= 100.0
    assert len(runs.calls) * 10.0 <= 200.0 + 10.0


def test_the_budget_ends_the_confirmations_extra_rounds(tmp_path, monkeypatch) -> None:
    runs = FakeRuns(slow=_confirmation_scatter(0.06), duration_s=10.0)
    result = _tuner(tmp_path, monkeypatch, runs, only=["zero_grad_set_to_none"], time_budget_s=140.0).run()
    assert result.confirmed and result.confirmation["rounds"] < 8
    assert len(runs.calls) * 10.0 <= 140.0 + 10.0


def test_a_confirmation_the_budget_ends_imprecise_says_so_and_what_more_would_take(tmp_path, monkeypatch) -> None:
    # Runs of 10 s scattered +-10%: the budget ends the confirmation after 4 rounds at +-17% (the
    # scatter of the 3 rounds whose runs agree, Student's t for 2 degrees of freedom); at that scatter
    # about 20 rounds would reach 5%, sixteen more rounds of two 10 s runs. (The normal quantile said
    # +-7% and 9 rounds; ratios of two runs scattered +-10% each need about 24.)
    runs = FakeRuns(slow=_confirmation_scatter(0.10), duration_s=10.0)
    result = _tuner(tmp_path, monkeypatch, runs, only=["zero_grad_set_to_none"], time_budget_s=140.0).run()
    confirmation = result.confirmation
    assert result.confirmed and not confirmation["precise"] and confirmation["rounds"] == 4
    assert confirmation["rounds_for_precision"] == 20
    assert ("is +-17%, wider than the 5% aimed at: the time budget ended it after 4 rounds; about 20 rounds "
            "(~5 min more) would reach it if the machine stays this noisy") in confirmation["reason"]


def test_diminishing_returns_waits_for_the_knobs_the_findings_name_and_says_what_happened(
        tmp_path, monkeypatch) -> None:
    monkeypatch.setattr("torchdoctor.tune.candidates.named_knobs", lambda record: ["compile"])
    monkeypatch.setattr(tuner, "named_knobs", lambda record: ["compile"])
    runs = FakeRuns()
    result = _tuner(tmp_path, monkeypatch, runs, patience=1, only=["channels_last", "compile", "no_anomaly_detection"],
                    repeat_baseline=False).run()
    tried = [t["knob"] for t in result.trials[1:]]
    # anomaly mode is on in the fabricated runs: the structure requires its knob, before the findings'
    assert tried[:2] == ["no_anomaly_detection", "compile"]
    assert "diminishing returns" in result.stop_reason
    assert "compile: not kept" in result.stop_reason or "channels_last: not kept" in result.stop_reason
    assert "less than" not in result.stop_reason


def test_the_budget_keeps_room_for_the_confirmation(tmp_path, monkeypatch) -> None:
    runs = FakeRuns(duration_s=10.0)
    result = _tuner(tmp_path, monkeypatch, runs, only=KNOBS, time_budget_s=150.0, confirm_rounds=2).run()
    assert "--time-budget" in result.stop_reason
    assert result.confirmation is not None and result.confirmation["status"] == "confirmed"
    assert len(runs.calls) * 10.0 <= 150.0 + 10.0


def test_a_budget_too_short_for_the_baseline_says_what_the_first_run_measured_and_tries_nothing(
        tmp_path, monkeypatch) -> None:
    """A 10 s run and a 15 s budget: the baseline's repeat would end past the budget, so no
    trial could be judged; the error (exit status 2) gives the first run's figures."""
    runs = FakeRuns(duration_s=10.0)
    with pytest.raises(BudgetTooShortError) as raised:
        _tuner(tmp_path, monkeypatch, runs, time_budget_s=15.0).run()
    assert raised.value.exit_code == 2 and len(runs.calls) == 1
    message = str(raised.value)
    assert message.startswith("--time-budget 15 s is too short for even the baseline: its first run took 10.0 s")
    assert "(30 steps at 100 ms a step, run run0)" in message and "about 20 s" in message
    # Without repeating the baseline, one run is the baseline: the same budget holds it.
    result = _tuner(tmp_path, monkeypatch, FakeRuns(duration_s=10.0), time_budget_s=15.0, repeat_baseline=False).run()
    assert result.trials[0]["knob"] is None


def test_the_budget_is_planned_from_timing_runs_not_from_the_profiled_baseline(tmp_path, monkeypatch) -> None:
    """The first run also profiles and diagnoses: 30 s where the others take 10 s. Planned from
    the median of both (20 s), a trial (3 runs) and the confirmation's reserve (6 runs) after the
    two baselines (40 s) would need 220 s of the 150; planned from the timing runs, 130 s."""
    runs = FakeRuns(duration_s=10.0)

    def observe(*args: Any, **kwargs: Any) -> Any:
        run = FakeRuns.__call__(runs, *args, **kwargs)
        run.duration_s = 30.0 if len(runs.calls) == 1 else 10.0
        return run

    monkeypatch.setattr(runner, "observe_run", observe)
    config = TuneConfig(only=["zero_grad_set_to_none"], patience=10, time_budget_s=150.0)
    result = Tuner(tmp_path / "train.py", [], config, store=RunStore(tmp_path / "runs.db"), work_dir=tmp_path).run()
    assert [t["knob"] for t in result.trials] == [None, "zero_grad_set_to_none"]
    assert result.kept == {"zero_grad_set_to_none": True}


def test_a_precision_knob_is_not_kept_with_its_numerics_unchecked(tmp_path, monkeypatch) -> None:
    monkeypatch.setitem(EFFECT, "compile", 0.5)
    runs = FakeRuns(loss=lambda knobs: None)  # an inference loop: no loss, and no outputs here
    result = _tuner(tmp_path, monkeypatch, runs, only=["compile"], repeat_baseline=False).run()
    assert result.kept == {}
    assert "not kept unchecked" in result.trials[1]["reason"]
    accepted = _tuner(tmp_path / "b", monkeypatch, FakeRuns(loss=lambda knobs: None), only=["compile"],
                      repeat_baseline=False, accept_unchecked_numerics=True).run()
    assert accepted.kept == {"compile": {"mode": "default", "dynamic": False}}
    assert accepted.numerics_unchecked == ["compile"]


def test_console_json_and_trials_agree_on_what_was_kept(tmp_path, monkeypatch) -> None:
    monkeypatch.setitem(EFFECT, "no_anomaly_detection", 0.8)
    result = _tuner(tmp_path, monkeypatch, FakeRuns(), repeat_baseline=False).run()
    kept_trials = {t["knob"]: t["value"] for t in result.trials if t["status"] == "kept"}
    assert kept_trials == result.kept
    assert all(f"{k}={v!r}" in result.summary for k, v in result.kept.items())


def test_a_stop_signal_between_runs_starts_no_other_run_and_sets_the_exit_status(tmp_path, monkeypatch) -> None:
    import signal

    from torchdoctor.tune.errors import TuneInterruptedError

    runs = FakeRuns()
    tuner = _tuner(tmp_path, monkeypatch, runs, only=["zero_grad_set_to_none"])
    # SIGTERM arrives once the trial's first candidate run (the third run) has ended.
    tuner.stop_signal = lambda: signal.SIGTERM if len(runs.calls) >= 3 else None
    result = tuner.run()
    assert len(runs.calls) == 3 and result.exit_status == 128 + signal.SIGTERM
    assert result.stop_reason.startswith("interrupted (SIGTERM)") and result.kept == {}
    assert [t["status"] for t in result.trials] == ["baseline", "interrupted"]
    assert result.trials[1]["reason"] == "interrupted (SIGTERM)"
    # Before the first baseline run: nothing to report, and the error carries the exit status.
    early = _tuner(tmp_path / "early", monkeypatch, FakeRuns(), only=["zero_grad_set_to_none"])
    early.stop_signal = lambda: signal.SIGHUP
    with pytest.raises(TuneInterruptedError, match=r"interrupted \(SIGHUP\) during the baseline run") as raised:
        early.run()
    assert raised.value.exit_code == 128 + signal.SIGHUP


def test_a_runs_time_per_sample_is_its_total_time_over_its_total_samples() -> None:
    """As `torchdoctor check` divides: a short last batch weighs as little as it counts."""
    steps = [StepSample(index=0, wall_s=0.4, batch_size=64), StepSample(index=1, wall_s=0.4, batch_size=64),
             StepSample(index=2, wall_s=0.1, batch_size=8), StepSample(index=3, wall_s=0.1)]  # no size: left out
    run = Run(knobs={}, role="baseline", record=Record(steps=steps))
    per_sample = run.times(per_sample=True)
    assert len(per_sample) == 3
    assert math.isclose(sum(per_sample) / len(per_sample), (0.4 + 0.4 + 0.1) / (64 + 64 + 8))
    assert run.times(per_sample=False) == [0.4, 0.4, 0.1, 0.1]


def test_each_knob_answers_for_its_own_numerics_not_for_those_of_the_knobs_kept_before_it(
        tmp_path, monkeypatch) -> None:
    # channels_last moves the loss 0.5% (within its 1%) and is kept; zero_grad_set_to_none, tried on
    # top of it with a 0.1% tolerance, changes nothing itself. Against the baseline it measured
    # channels_last's 0.5% and was rejected (as optimizer_impl was behind a kept bf16 autocast's 4.1%
    # on the zoo's tiny-ops script).
    monkeypatch.setitem(EFFECT, "channels_last", 0.6)
    runs = FakeRuns(loss=lambda knobs: 1.005 if "channels_last" in knobs else 1.0)
    result = _tuner(tmp_path, monkeypatch, runs, only=["channels_last", "zero_grad_set_to_none"]).run()
    by_knob = {t["knob"]: t for t in result.trials}
    assert [t["knob"] for t in result.trials] == [None, "channels_last", "zero_grad_set_to_none"]
    assert by_knob["channels_last"]["status"] == "kept"
    assert by_knob["zero_grad_set_to_none"]["status"] == "kept", by_knob["zero_grad_set_to_none"]["reason"]
    assert result.kept == {"channels_last": True, "zero_grad_set_to_none": True}


class ScriptedTrials:
    """Stands in for `trial_runner.try_value`: each value's side-by-side ratio from `ratios`
    (knob, value) -> ratio (1.0 unless given), accepted when below 1, its run the baseline's;
    `tried` lists each knob tried with the knobs kept under it."""

    def __init__(self, ratios: dict[tuple[str, Any], float]) -> None:
        self.ratios = ratios
        self.tried: list[tuple[str, dict[str, Any]]] = []

    def __call__(self, runner: Runner, state: TuneState, knob: Knob, value: Any,
                 companions: dict[str, Any] | None = None) -> Trial:
        ratio = self.ratios.get((knob.name, value), 1.0)
        trial = Trial(index=len(state.trials), knob=knob.name, value=value,
                      knobs={**state.kept, **(companions or {}), knob.name: value},
                      status=ACCEPTED if ratio < 1.0 else REJECTED, ratio=ratio, reason=f"ratio {ratio}",
                      runs=list(state.baseline.runs))
        state.trials.append(trial)
        self.tried.append((knob.name, dict(state.kept)))
        return trial


def _search(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, trials: ScriptedTrials, order: list[str], *,
            named: tuple[str, ...] = (), duration_s: float = 1.0, **options: Any) -> TuneState:
    """`search.search` over `order` after a baseline run of FakeRuns (`duration_s` long), its
    trials scripted."""
    monkeypatch.setattr(search, "try_value", trials)
    monkeypatch.setattr(runner, "observe_run", FakeRuns(duration_s=duration_s))
    config = TuneConfig(**{"patience": 10, **options})
    setup = TuneSetup(tmp_path / "train.py", [], config, RunStore(tmp_path / "runs.db"), tmp_path, "tune-test", None,
                      lambda: None)
    script_runs = Runner(setup)
    first = script_runs.observe({}, "baseline")
    state = TuneState(baseline=Trial(index=0, knob=None, value=None, knobs={}, runs=[first]), trial_steps=30)
    search.search(script_runs, state, order, search.SearchHistory(named=list(named)))
    return state


def test_the_search_tries_each_applicable_knob_on_what_is_kept_and_retries_only_what_a_keep_changed(
        tmp_path, monkeypatch) -> None:
    trials = ScriptedTrials({("zero_grad_set_to_none", True): 0.5})
    order = ["no_anomaly_detection", "autocast_bf16", "zero_grad_set_to_none", "channels_last"]
    state = _search(tmp_path, monkeypatch, trials, order)
    kept = {"zero_grad_set_to_none": True}
    # autocast_bf16 does not apply on this CPU run; channels_last already ran on top of the kept knob.
    assert trials.tried == [("no_anomaly_detection", {}), ("zero_grad_set_to_none", {}), ("channels_last", kept),
                            ("no_anomaly_detection", kept)]
    assert state.kept == kept and state.best.knob == "zero_grad_set_to_none"
    assert state.stop_reason == "every applicable knob was tried"


def test_of_a_knobs_accepted_values_the_fastest_is_kept_and_the_others_rejected(tmp_path, monkeypatch) -> None:
    trials = ScriptedTrials({("optimizer_impl", "fused"): 0.9, ("optimizer_impl", "foreach"): 0.8})
    state = _search(tmp_path, monkeypatch, trials, ["optimizer_impl"])
    fused, foreach = state.trials[1:]
    assert state.kept == {"optimizer_impl": "foreach"} and foreach.status == KEPT
    assert fused.status == REJECTED and fused.reason == "faster (x1.11), but optimizer_impl='foreach' was faster still"


def test_the_search_stops_at_the_trial_limit_and_says_so(tmp_path, monkeypatch) -> None:
    trials = ScriptedTrials({})
    state = _search(tmp_path, monkeypatch, trials, KNOBS, max_trials=2)
    assert [knob for knob, _ in trials.tried] == KNOBS[:2]
    assert state.stop_reason == "--max-trials 2 reached"


def test_diminishing_returns_stop_the_search_only_once_every_named_knob_was_considered(
        tmp_path, monkeypatch) -> None:
    trials = ScriptedTrials({})
    order = ["no_anomaly_detection", "zero_grad_set_to_none", "channels_last", "optimizer_impl"]
    state = _search(tmp_path, monkeypatch, trials, order, named=("channels_last",), patience=1)
    assert [knob for knob, _ in trials.tried] == order[:3]
    assert state.stop_reason == ("diminishing returns: none of the last 1 knobs tried gained 2% or more "
                                 "(channels_last: not kept, ratio 1.0)")


def test_the_search_tries_nothing_the_budget_has_no_room_for(tmp_path, monkeypatch) -> None:
    """The baseline took 60 s of a 100 s budget: a trial and the confirmation's reserve do not fit."""
    trials = ScriptedTrials({})
    state = _search(tmp_path, monkeypatch, trials, KNOBS, duration_s=60.0, time_budget_s=100.0)
    assert trials.tried == []
    assert state.stop_reason == "--time-budget 100 s: no room for another trial and the confirmation"


def _history(**fields: Any) -> search.SearchHistory:
    history = search.SearchHistory(named=["zero_grad_set_to_none"], required={"compile": "tiny operators dominate"})
    history.considered |= {"zero_grad_set_to_none", "compile", "threads"}
    for name, value in fields.items():
        setattr(history, name, value)
    return history


def test_diminishing_returns_waits_until_every_required_knob_was_decided() -> None:
    config = TuneConfig(patience=2)
    assert not search.diminishing(_history(no_gain=3, decided={"threads"}), config, elapsed_s=0.0)
    assert search.diminishing(_history(no_gain=3, decided={"threads", "compile"}), config, elapsed_s=0.0)


def test_diminishing_returns_never_ends_the_search_with_more_than_half_an_explicit_budget_left() -> None:
    history = _history(no_gain=3, decided={"compile"})
    config = TuneConfig(patience=2, time_budget_s=600.0)
    assert not search.diminishing(history, config, elapsed_s=299.0)
    assert search.diminishing(history, config, elapsed_s=300.0)


def test_a_knob_whose_trials_were_all_undecided_counts_as_untried() -> None:
    history = _history(no_gain=1)
    noisy = Trial(index=1, knob="compile", value={"mode": "default"}, knobs={}, status=REJECTED,
                  reason="undecided: runs of one configuration disagree", verdict={"decided": False}, ratio=0.9)
    history.record("compile", None, [noisy], min_gain=0.02)
    assert history.no_gain == 1 and "compile" not in history.decided
    assert "compile: undecided (too noisy), counted as untried" in history.outcomes
    slower = Trial(index=2, knob="compile", value={"mode": "default"}, knobs={}, status=REJECTED,
                   reason="slower: x0.90", verdict={"decided": True}, ratio=1.1)
    history.record("compile", None, [slower], min_gain=0.02)
    assert history.no_gain == 2 and "compile" in history.decided


def test_a_required_knob_is_tried_first_and_holds_back_diminishing_returns(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(tuner, "preconditions", lambda structure: {"compile": "tiny operators dominate"})
    runs = FakeRuns()
    result = _tuner(tmp_path, monkeypatch, runs, patience=1, repeat_baseline=False,
                    only=["zero_grad_set_to_none", "channels_last", "no_anomaly_detection", "compile"]).run()
    tried = [t["knob"] for t in result.trials[1:]]
    assert tried[0] == "compile"
    assert result.search["required"] == [{"knob": "compile", "why": "tiny operators dominate", "decided": True}]
    assert result.search["plan"]["trials"] >= 1


def test_a_findings_fix_is_tried_and_kept_as_a_whole(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(tuner, "fix_companions", lambda record: {"zero_grad_set_to_none": {"no_anomaly_detection": True}})
    result = _tuner(tmp_path, monkeypatch, FakeRuns(), only=["zero_grad_set_to_none"], repeat_baseline=False).run()
    trial = result.trials[1]
    assert trial["knob"] == "zero_grad_set_to_none"
    assert trial["knobs"] == {"no_anomaly_detection": True, "zero_grad_set_to_none": True}
    assert result.kept == {"no_anomaly_detection": True, "zero_grad_set_to_none": True}
