"""The search's plan, told before its first trial: how many trials, about how long, and the
budget that stops it.

The estimate multiplies each knob's trials (one per choice, `int_trials` for an integer knob) by
the runs a trial takes and a run's measured duration (the baseline's), adds what compiling costs
each run of a `compile` trial, and the confirmation reserved at the end. It is an estimate: an
undecided trial runs more rounds, a failed one fewer.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from torchdoctor.knobs import REGISTRY
from torchdoctor.record import Record
from torchdoctor.tune.budget import runs_per_trial
from torchdoctor.tune.config import TuneConfig

#: Seconds torch.compile (inductor) adds to each run of a compiled configuration, a rough figure:
#: the tiny-operator test script's compiled runs took 15-40 s longer than its eager ones on a
#: shared 2-core machine. What a run of the script costs besides is its measured duration.
COMPILE_RUN_COST_S = 30.0


@dataclass(frozen=True, slots=True)
class SearchPlan:
    """`trials` planned (at most `max_trials`), their estimated `seconds` with the confirmation,
    and the `budget_s` that stops the search (`explicit`: given with --time-budget)."""

    trials: int
    seconds: float
    budget_s: float
    explicit: bool

    def text(self) -> str:
        budget = (f"--time-budget {self.budget_s:.0f} s" if self.explicit
                  else f"the default budget of {self.budget_s:.0f} s (set another with --time-budget)")
        over = (": more than the budget, so the search will end before every planned trial"
                if self.seconds > self.budget_s else "")
        return (f"plan: {self.trials} trial(s), about {_minutes(self.seconds)} with the confirmation; "
                f"the search stops at {budget}{over}")

    def to_dict(self) -> dict[str, object]:
        return {"trials": self.trials, "estimated_s": round(self.seconds, 1), "budget_s": self.budget_s,
                "explicit_budget": self.explicit}


def search_plan(order: Sequence[str], record: Record, config: TuneConfig, run_s: float) -> SearchPlan:
    """The plan for trying the knobs of `order` that apply to `record` (the baseline's), each run
    taking about `run_s` seconds."""
    trials, seconds = 0, 0.0
    runs = runs_per_trial(config)
    for name in order:
        knob = REGISTRY[name]
        if not knob.applies(record):
            continue
        count = min(config.int_trials if knob.kind == "int" else len(knob.choices(record)),
                    config.max_trials - trials)
        if count <= 0:
            break
        compiling = COMPILE_RUN_COST_S * config.rounds if name == "compile" else 0.0
        trials += count
        seconds += count * (runs * run_s + compiling)
    confirming = max(2 * config.confirm_rounds * (run_s + config.confirm_window_s), config.confirm_span_s)
    return SearchPlan(trials, seconds + confirming, config.budget_s, config.time_budget_s is not None)


def _minutes(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.0f} min"
