"""The plan told before the first trial: trials, estimated time, the budget that stops it."""

from __future__ import annotations

from torchdoctor.record import Record
from torchdoctor.tune.config import TuneConfig
from torchdoctor.tune.plan import COMPILE_RUN_COST_S, search_plan

RECORD = Record(env={"models": [{"class": "Net", "module_types": {"Linear": 2}}],
                     "optimizers": [{"class": "SGD", "module": "torch.optim.sgd"}],
                     "torch": {"anomaly_detection": True}, "cpu": {"logical_cores": 2}})


def test_the_plan_counts_each_knobs_trials_their_runs_and_compilings_cost() -> None:
    config = TuneConfig(confirm_window_s=0.0, confirm_span_s=0.0, confirm_rounds=3)
    plan = search_plan(["no_anomaly_detection", "compile"], RECORD, config, run_s=5.0)
    assert plan.trials == 2  # a bool knob and compile's one mode on a CPU
    runs = 2 * config.rounds - 1
    assert plan.seconds == 2 * runs * 5.0 + COMPILE_RUN_COST_S * config.rounds + 2 * 3 * 5.0
    assert not plan.explicit and plan.budget_s == config.default_budget_s
    assert plan.text().startswith("plan: 2 trial(s), about 2 min with the confirmation; the search stops at "
                                  "the default budget of 1200 s")


def test_the_plan_stops_at_max_trials_and_names_an_explicit_budget() -> None:
    config = TuneConfig(max_trials=1, time_budget_s=300.0)
    plan = search_plan(["no_anomaly_detection", "compile"], RECORD, config, run_s=1.0)
    assert plan.trials == 1 and plan.explicit
    assert plan.text().endswith("the search stops at --time-budget 300 s")
    short = search_plan(["no_anomaly_detection", "compile"], RECORD, TuneConfig(time_budget_s=60.0), run_s=10.0)
    assert short.text().endswith("--time-budget 60 s: more than the budget, so the search will end before every "
                                 "planned trial")
